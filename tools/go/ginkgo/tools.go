//go:build tools

// Package tools pins the ginkgo CLI, which runs upstream Kueue's e2e suites (the conformance
// tool's test binaries) in parallel processes. Its version is the ginkgo library those
// suites link (tools/go/conformance/go.mod), so the CLI and the binaries speak alike.
package tools

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
)

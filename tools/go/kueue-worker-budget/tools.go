//go:build tools

// Package tools pins upstream Kueue's manager, built from a copy of the v0.19.2 module with
// worker-client-budget.patch applied (the `replace` in go.mod): for bench/multikueue only.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)

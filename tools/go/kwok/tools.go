//go:build tools

// Package tools pins the commands fleetq's local fleet builds from sigs.k8s.io/kwok.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)

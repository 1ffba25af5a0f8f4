//go:build tools

// Package tools pins the kubelet a real node of the local fleet runs (opt-in:
// `fleetq dev tools kubelet`; its own module so the fleet's tools keep their stamp).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubelet"
)

//go:build tools

// Package tools pins the KubeRay operator fleetq's local fleet builds from
// github.com/ray-project/kuberay/ray-operator (its main package is the module root).
package tools

import (
	_ "github.com/ray-project/kuberay/ray-operator"
)

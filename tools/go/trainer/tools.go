//go:build tools

// Package tools pins the Kubeflow Trainer controller-manager fleetq's local fleet builds
// from github.com/kubeflow/trainer/v2 (its main package is cmd/trainer-controller-manager).
package tools

import (
	_ "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
)

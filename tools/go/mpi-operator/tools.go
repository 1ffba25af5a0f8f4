//go:build tools

// Package tools pins the MPI Operator fleetq's local fleet builds from github.com/kubeflow/mpi-operator.
package tools

import (
	_ "github.com/kubeflow/mpi-operator/cmd/mpi-operator"
)

//go:build tools

// Package tools pins the JobSet controller fleetq's local fleet builds from sigs.k8s.io/jobset.
package tools

import (
	_ "sigs.k8s.io/jobset"
)

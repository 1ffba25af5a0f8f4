//go:build tools

// Package tools pins the commands fleetq's local fleet builds from sigs.k8s.io/kueue.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
	_ "sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue"
	_ "sigs.k8s.io/kueue/test/performance/scheduler/runner"
)

//go:build tools

// Package tools pins the LeaderWorkerSet controller fleetq's local fleet builds from sigs.k8s.io/lws.
package tools

import (
	_ "sigs.k8s.io/lws/cmd"
)

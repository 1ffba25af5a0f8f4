//go:build tools

// Package tools pins the commands fleetq's local fleet builds from go.etcd.io/etcd/server/v3.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)

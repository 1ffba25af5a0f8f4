//go:build tools

// Package tools pins the commands fleetq's local fleet builds from helm.sh/helm/v4.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)

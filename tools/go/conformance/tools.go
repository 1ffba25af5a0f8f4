//go:build tools

// Package tools pins upstream Kueue's e2e suites and kubectl-kueue, which fleetq runs as its
// conformance test (docs/conformance.md). The suites are test-only packages, which cannot be
// imported: this file imports kubectl-kueue, upstream's e2e helpers (test/util) and every module the
// suites' test files import, so `go mod tidy` records them all and `go test -c` of
// sigs.k8s.io/kueue/test/e2e/... builds from this go.sum.
package tools

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/go-cmp/cmp/cmpopts"
	_ "github.com/kubeflow/mpi-operator/pkg/apis/kubeflow/v2beta1"
	_ "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	_ "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "github.com/project-codeflare/appwrapper/api/v1beta2"
	_ "github.com/prometheus/client_golang/api/prometheus/v1"
	_ "github.com/prometheus/common/model"
	_ "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	_ "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/api/batch/v1"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/api/events/v1"
	_ "k8s.io/api/rbac/v1"
	_ "k8s.io/apimachinery/pkg/api/meta"
	_ "k8s.io/apimachinery/pkg/api/resource"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apimachinery/pkg/types"
	_ "k8s.io/apimachinery/pkg/util/intstr"
	_ "k8s.io/apimachinery/pkg/util/sets"
	_ "k8s.io/apimachinery/pkg/util/version"
	_ "k8s.io/client-go/discovery"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/kube-openapi/pkg/util/proto"
	_ "k8s.io/utils/ptr"
	_ "sigs.k8s.io/controller-runtime/pkg/client"
	_ "sigs.k8s.io/kueue/cmd/kueuectl"
	_ "sigs.k8s.io/kueue/test/util"
	_ "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

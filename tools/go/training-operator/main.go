// Command training-operator runs the Kubeflow training operator's controllers and
// validation webhooks out of cluster, one process per fleet member.
//
// It is the operator's own cmd/training-operator.v1 minus its certificate rotator: that
// rotator keeps the serving certificate in a Secret of the operator's namespace, names it
// for an in-cluster Service and writes it to a fixed /tmp directory, so two operators on
// one machine would overwrite each other's certificate. Here the certificate (SAN
// 127.0.0.1, issued by devfleet) is read from --cert-dir and the webhook configuration is
// registered by devfleet. Controllers, webhooks and --enable-scheme are the module's.
package main

import (
	"flag"
	"os"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/config"
	controllerv1 "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
	"github.com/kubeflow/training-operator/pkg/webhooks"
)

func main() {
	var metricsAddr, probeAddr, webhookHost, certDir string
	var webhookPort, controllerThreads int
	var enabledSchemes controllerv1.EnabledSchemes
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metric endpoint binds to (0: off).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "The address the probe endpoint binds to.")
	flag.StringVar(&webhookHost, "webhook-host", "127.0.0.1", "The address the webhook server binds to.")
	flag.IntVar(&webhookPort, "webhook-server-port", 9443, "Port of the webhook server.")
	flag.StringVar(&certDir, "cert-dir", "", "Directory holding tls.crt and tls.key of the webhook server.")
	flag.IntVar(&controllerThreads, "controller-threads", 1, "Number of worker threads used by the controller.")
	flag.Var(&enabledSchemes, "enable-scheme", "Enable scheme(s) as --enable-scheme=tfjob --enable-scheme=pytorchjob, case insensitive.")
	flag.StringVar(&config.Config.PyTorchInitContainerImage, "pytorch-init-container-image",
		config.PyTorchInitContainerImageDefault, "The image for pytorch init container")
	flag.StringVar(&config.Config.PyTorchInitContainerTemplateFile, "pytorch-init-container-template-file",
		config.PyTorchInitContainerTemplateFileDefault, "The template file for pytorch init container")
	flag.IntVar(&config.Config.PyTorchInitContainerMaxTries, "pytorch-init-container-max-tries",
		config.PyTorchInitContainerMaxTriesDefault, "The number of tries for the pytorch init container")
	flag.StringVar(&config.Config.MPIKubectlDeliveryImage, "mpi-kubectl-delivery-image",
		config.MPIKubectlDeliveryImageDefault, "The image for mpi launcher init container")
	opts := zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		WebhookServer:          webhook.NewServer(webhook.Options{Host: webhookHost, Port: webhookPort, CertDir: certDir}),
		HealthProbeBindAddress: probeAddr,
	})
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	if enabledSchemes.Empty() {
		enabledSchemes.FillAll()
	}
	gang := common.GenNonGangSchedulerSetupFunc()
	for _, s := range enabledSchemes {
		if err := controllerv1.SupportedSchemeReconciler[s](mgr, gang, controllerThreads); err != nil {
			log.Error(err, "unable to create controller", "scheme", s)
			os.Exit(1)
		}
		if err := webhooks.SupportedSchemeWebhook[s](mgr); err != nil {
			log.Error(err, "unable to register webhook", "scheme", s)
			os.Exit(1)
		}
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker()))
	log.Info("starting manager", "schemes", enabledSchemes.String())
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// Command mpi-operator runs the MPI Operator's MPIJob controller out of cluster, one
// process per fleet member.
//
// It is the module's cmd/mpi-operator minus what only fits one operator per machine in a
// Pod: that command serves its health check on the fixed port 8080 (a second process on
// the same machine exits) and always runs leader election. Here the health check listens
// on --health-addr and answers once the informers have synced; the controller, its
// informers and its flags (--namespace, --threadiness, --kube-api-qps/burst) are the module's.
package main

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	kubeinformers "k8s.io/client-go/informers"
	kubeclientset "k8s.io/client-go/kubernetes"
	clientgokubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog"

	mpijobclientset "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned"
	kubeflowscheme "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned/scheme"
	informers "github.com/kubeflow/mpi-operator/pkg/client/informers/externalversions"
	controllersv1 "github.com/kubeflow/mpi-operator/pkg/controller"
)

func main() {
	var kubeconfig, namespace, healthAddr string
	var threadiness, qps, burst int
	flag.StringVar(&kubeconfig, "kubeConfig", "", "Path to a kubeconfig.")
	flag.StringVar(&namespace, "namespace", "", "The namespace to monitor MPIJobs in (empty: all).")
	flag.StringVar(&healthAddr, "health-addr", "127.0.0.1:8080", "Address of the /healthz endpoint.")
	flag.IntVar(&threadiness, "threadiness", 2, "How many threads process MPIJobs.")
	flag.IntVar(&qps, "kube-api-qps", 50, "QPS to the apiserver.")
	flag.IntVar(&burst, "kube-api-burst", 100, "Burst to the apiserver.")
	klog.InitFlags(nil)
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		klog.Fatalf("Error building kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	kubeClient := kubeclientset.NewForConfigOrDie(cfg)
	mpiJobClient := mpijobclientset.NewForConfigOrDie(cfg)
	if err := kubeflowscheme.AddToScheme(clientgokubescheme.Scheme); err != nil {
		klog.Fatalf("Adding the MPIJob scheme failed: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var ready atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	go func() {
		if err := http.ListenAndServe(healthAddr, mux); err != nil {
			klog.Fatalf("Health check server: %v", err)
		}
	}()

	var kubeOpts []kubeinformers.SharedInformerOption
	var mpiOpts []informers.SharedInformerOption
	if namespace != "" {
		kubeOpts = append(kubeOpts, kubeinformers.WithNamespace(namespace))
		mpiOpts = append(mpiOpts, informers.WithNamespace(namespace))
	}
	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeOpts...)
	mpiInformers := informers.NewSharedInformerFactoryWithOptions(mpiJobClient, 0, mpiOpts...)
	controller, err := controllersv1.NewMPIJobController(
		kubeClient, mpiJobClient, nil, nil,
		kubeInformers.Core().V1().ConfigMaps(),
		kubeInformers.Core().V1().Secrets(),
		kubeInformers.Core().V1().Services(),
		kubeInformers.Batch().V1().Jobs(),
		kubeInformers.Core().V1().Pods(),
		kubeInformers.Scheduling().V1().PriorityClasses(),
		mpiInformers.Kubeflow().V2beta1().MPIJobs(),
		namespace, "")
	if err != nil {
		klog.Fatalf("Setting up the controller failed: %v", err)
	}
	kubeInformers.Start(ctx.Done())
	mpiInformers.Start(ctx.Done())
	kubeInformers.WaitForCacheSync(ctx.Done())
	mpiInformers.WaitForCacheSync(ctx.Done())
	ready.Store(true)
	klog.Info("MPIJob controller starting")
	if err := controller.Run(threadiness, ctx.Done()); err != nil {
		klog.Fatalf("Error running controller: %v", err)
	}
}

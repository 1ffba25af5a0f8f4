"""One definition per Kubeflow v1 job kind (upstream's `kubeflow/jobs/<kind>` packages)."""

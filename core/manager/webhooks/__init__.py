"""The hub's admission webhook server: TLS, certificates and webhook configurations.

`server` answers the apiserver's AdmissionReview calls, `tls` keeps the certificate it
presents swappable, `cert_manager` keeps that certificate issued (or loaded from a
mounted Secret) and trusted, `configurations` builds the webhook configurations that
point the apiserver at it, and `runtime` assembles all of it from the hub's Configuration.
"""

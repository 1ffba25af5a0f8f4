{{/*
Names, labels and the derived Configuration of the hub chart.
*/}}

{{- define "fleetq-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every namespaced object name; also unique per release for cluster-scoped ones. */}}
{{- define "fleetq-hub.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "fleetq-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fleetq-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fleetq-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: hub
{{- end -}}

{{- define "fleetq-hub.labels" -}}
helm.sh/chart: {{ include "fleetq-hub.chart" . }}
{{ include "fleetq-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: fleetq
{{- end -}}

{{- define "fleetq-hub.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "fleetq-hub.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "fleetq-hub.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "fleetq-hub.webhookServiceName" -}}
{{- printf "%s-webhook-service" (include "fleetq-hub.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fleetq-hub.webhookSecretName" -}}
{{- default (printf "%s-webhook-server-cert" (include "fleetq-hub.fullname" .)) .Values.webhook.certificates.secretName -}}
{{- end -}}

{{- define "fleetq-hub.certificateName" -}}
{{- printf "%s-serving-cert" (include "fleetq-hub.fullname" .) -}}
{{- end -}}

{{- define "fleetq-hub.certDir" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end -}}

{{- define "fleetq-hub.certMode" -}}
{{- $mode := .Values.webhook.certificates.mode -}}
{{- if not (has $mode (list "internal" "certManager" "secret")) -}}
{{- fail (printf "webhook.certificates.mode: %q is not one of internal, certManager, secret" $mode) -}}
{{- end -}}
{{- if and (eq $mode "secret") (not .Values.webhook.certificates.caBundle) -}}
{{- fail "webhook.certificates.caBundle: mode secret needs the PEM of the CA that signed the certificate" -}}
{{- end -}}
{{- if and (eq $mode "secret") (not .Values.webhook.certificates.secretName) -}}
{{- fail "webhook.certificates.secretName: mode secret needs the name of your kubernetes.io/tls Secret" -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/*
The hub's Configuration file: `configuration` from the values, with the fields that must
agree with this chart's objects set from the chart. Setting one of those in `configuration`
fails the render, naming the value to use instead, so the file never silently disagrees
with the Services, ports and RBAC around it.
*/}}
{{- define "fleetq-core.manager.configuration" -}}
{{- $user := deepCopy (default (dict) .Values.configuration) -}}
{{- $reserved := dict "namespace" "the release namespace (helm --namespace)" "health" "ports.health" "webhook" "ports.webhook and webhook.*" "internalCertManagement" "webhook.certificates.*" "apiVersion" "nothing (the chart sets it)" "kind" "nothing (the chart sets it)" -}}
{{- range $key, $instead := $reserved -}}
{{- if hasKey $user $key -}}
{{- fail (printf "configuration.%s is set by the chart; use %s" $key $instead) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $user "metrics") (hasKey (get $user "metrics") "bindAddress") -}}
{{- fail "configuration.metrics.bindAddress is set by the chart; use ports.metrics" -}}
{{- end -}}
{{- $election := default (dict) (get $user "leaderElection") -}}
{{- if and (hasKey $election "resourceNamespace") (ne (get $election "resourceNamespace") .Release.Namespace) -}}
{{- fail "configuration.leaderElection.resourceNamespace must be the release namespace: the hub's Lease permissions are granted there only" -}}
{{- end -}}
{{- $derived := dict
  "apiVersion" "config.kueue.x-k8s.io/v1beta2"
  "kind" "Configuration"
  "namespace" .Release.Namespace
  "health" (dict "healthProbeBindAddress" (printf ":%d" (int .Values.ports.health)))
  "metrics" (dict "bindAddress" (printf ":%d" (int .Values.ports.metrics)))
  "webhook" (dict "port" (int .Values.ports.webhook) "certDir" (include "fleetq-hub.certDir" .))
  "internalCertManagement" (dict
    "enable" (eq (include "fleetq-hub.certMode" .) "internal")
    "webhookServiceName" (include "fleetq-hub.webhookServiceName" .)
    "webhookSecretName" (include "fleetq-hub.webhookSecretName" .))
-}}
{{- toYaml (mustMergeOverwrite $user $derived) -}}
{{- end -}}

{{/* The namespaceSelector of the Job webhooks: never kube-system or the hub's namespace. */}}
{{- define "fleetq-hub.jobNamespaceSelector" -}}
{{- $extra := default (dict) .Values.webhook.namespaceSelector -}}
{{- $excluded := list "kube-system" .Release.Namespace | uniq | sortAlpha -}}
{{- $expressions := list (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" $excluded) -}}
{{- range (default (list) (get $extra "matchExpressions")) -}}
{{- $expressions = append $expressions . -}}
{{- end -}}
{{- $selector := dict "matchExpressions" $expressions -}}
{{- with (get $extra "matchLabels") -}}
{{- $_ := set $selector "matchLabels" . -}}
{{- end -}}
{{- toYaml $selector -}}
{{- end -}}

{{/* The job namespace selector, further confined to the namespaces the Configuration's managedJobsNamespaceSelector selects (its default: not kube-system, not kueue-system), for the webhooks of kinds in the path of every pod (Pods); matchLabels become In expressions so the two AND together. */}}
{{- define "fleetq-hub.managedJobNamespaceSelector" -}}
{{- $selector := include "fleetq-hub.jobNamespaceSelector" . | fromYaml -}}
{{- $default := dict "matchExpressions" (list (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (list "kube-system" "kueue-system"))) -}}
{{- $managed := default $default (get (default (dict) .Values.configuration) "managedJobsNamespaceSelector") -}}
{{- $expressions := get $selector "matchExpressions" -}}
{{- range $key, $value := (default (dict) (get $managed "matchLabels")) -}}
{{- $expressions = append $expressions (dict "key" $key "operator" "In" "values" (list $value)) -}}
{{- end -}}
{{- range (default (list) (get $managed "matchExpressions")) -}}
{{- $expressions = append $expressions . -}}
{{- end -}}
{{- $_ := set $selector "matchExpressions" $expressions -}}
{{- toYaml $selector -}}
{{- end -}}

{{/* clientConfig of one webhook: the webhook Service, at `path`, with the caBundle when the chart knows it. */}}
{{- define "fleetq-hub.webhookClientConfig" -}}
{{- $root := .root -}}
service:
  name: {{ include "fleetq-hub.webhookServiceName" $root }}
  namespace: {{ $root.Release.Namespace }}
  path: {{ .path }}
  port: 443
{{- if eq (include "fleetq-hub.certMode" $root) "secret" }}
caBundle: {{ $root.Values.webhook.certificates.caBundle | b64enc }}
{{- end }}
{{- end -}}

{{/* Annotations of the webhook configurations: cert-manager's CA injection when it issues. */}}
{{- define "fleetq-hub.webhookAnnotations" -}}
{{- if eq (include "fleetq-hub.certMode" .) "certManager" -}}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "fleetq-hub.certificateName" .) }}
{{- end -}}
{{- end -}}

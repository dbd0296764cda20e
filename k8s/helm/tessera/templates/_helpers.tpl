{{/*
Names, labels and the values several templates share. The chart's tests
render it with the real Helm (test/k8s/helm/chart_fixture.h).
*/}}

{{/* The chart name, at most 63 characters (a label value). */}}
{{- define "tessera.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object name: "<release>-tessera", or the release name when it already says tessera. */}}
{{- define "tessera.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "tessera.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "tessera.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the scheduler pods; never change them on upgrade. */}}
{{- define "tessera.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tessera.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "tessera.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tessera.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{- define "tessera.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tessera.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* kube-scheduler's leader-election lease: its name and namespace. */}}
{{- define "tessera.leaseName" -}}
{{- default .Values.schedulerName .Values.kubeScheduler.leaderElection.resourceName -}}
{{- end -}}

{{/* Tessera's own lease: which replica writes on its own initiative. */}}
{{- define "tessera.extenderLeaseName" -}}
{{- include "tessera.leaseName" . -}}-extender
{{- end -}}

{{- define "tessera.leaseNamespace" -}}
{{- default .Release.Namespace .Values.kubeScheduler.leaderElection.resourceNamespace -}}
{{- end -}}

{{/* Tessera's image; there is no public one, so the repository must be given. */}}
{{- define "tessera.image" -}}
{{- required "tessera.image.repository is required: build the image from the repository's Dockerfile, push it where your nodes can pull it, and pass --set tessera.image.repository=<registry>/tessera-extender" .Values.tessera.image.repository }}:{{ default .Chart.AppVersion .Values.tessera.image.tag -}}
{{- end -}}

{{/* Labels that select the node agent's pods: a name of their own, so that no selector of the scheduler's (Service, PodDisruptionBudget, NetworkPolicy) takes them in. */}}
{{- define "tessera.nodeAgentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "tessera.name" . }}-node-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The node agent's ServiceAccount: its own (it may patch nodes, the scheduler may not), or the installer's. */}}
{{- define "tessera.nodeAgentServiceAccountName" -}}
{{- if .Values.nodeAgent.serviceAccountName -}}
{{- .Values.nodeAgent.serviceAccountName -}}
{{- else if .Values.serviceAccount.create -}}
{{- include "tessera.fullname" . }}-node-agent
{{- else -}}
{{- include "tessera.serviceAccountName" . -}}
{{- end -}}
{{- end -}}

{{/* The node agent's image: Tessera's (the Dockerfile ships both programs) unless another is given. */}}
{{- define "tessera.nodeAgentImage" -}}
{{- if .Values.nodeAgent.image.repository -}}
{{- .Values.nodeAgent.image.repository }}:{{ default .Chart.AppVersion .Values.nodeAgent.image.tag -}}
{{- else -}}
{{- include "tessera.image" . -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the webhook's serving certificate (tls.crt, tls.key). */}}
{{- define "tessera.webhookSecretName" -}}
{{- if eq .Values.webhook.certificate.source "secret" -}}
{{- required "webhook.certificate.secretName is required with source secret" .Values.webhook.certificate.secretName -}}
{{- else -}}
{{- include "tessera.fullname" . }}-webhook-tls
{{- end -}}
{{- end -}}

{{/*
Who makes the webhook's serving certificate: certManager, helm (a self-signed
CA and certificate generated at install, templates/webhook-selfsigned.yaml) or
secret. "auto": certManager when the cluster serves cert-manager.io/v1, else helm.
*/}}
{{- define "tessera.webhookCertSource" -}}
{{- if ne .Values.webhook.certificate.source "auto" -}}
{{- .Values.webhook.certificate.source -}}
{{- else if .Capabilities.APIVersions.Has "cert-manager.io/v1" -}}
certManager
{{- else -}}
helm
{{- end -}}
{{- end -}}

{{/*
The MutatingWebhookConfiguration. With the helm source its caBundle is a
placeholder that templates/webhook-selfsigned.yaml replaces with the CA it made.
*/}}
{{- define "tessera.mutatingWebhookConfiguration" -}}
# failurePolicy and its scope: values.yaml, webhook.
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: {{ include "tessera.fullname" . }}-pods
  labels:
    {{- include "tessera.labels" . | nindent 4 }}
  {{- if eq (include "tessera.webhookCertSource" .) "certManager" }}
  annotations:
    # cert-manager's cainjector writes the CA of this Certificate into caBundle.
    cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "tessera.fullname" . }}-webhook
  {{- end }}
webhooks:
  - name: pods.tessera.io
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: {{ .Values.webhook.failurePolicy }}
    timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
    # Runs again after other mutating webhooks changed the pod (idempotent).
    reinvocationPolicy: IfNeeded
    clientConfig:
      service:
        name: {{ include "tessera.fullname" . }}-webhook
        namespace: {{ .Release.Namespace }}
        path: /mutate-pods
        port: 443
      {{- if eq .Values.webhook.certificate.source "secret" }}
      caBundle: {{ required "webhook.certificate.caBundle is required with source secret" .Values.webhook.certificate.caBundle }}
      {{- else if eq (include "tessera.webhookCertSource" .) "helm" }}
      caBundle: __TESSERA_HELM_CA_BUNDLE__
      {{- end }}
    rules:
      - operations: ["CREATE"]
        apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["pods"]
        scope: Namespaced
    namespaceSelector:
      {{- with .Values.webhook.namespaceSelector.matchLabels }}
      matchLabels:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      # Never kube-system nor Tessera's own namespace: with failurePolicy
      # Fail, Tessera's own pods could otherwise not be created while it is down.
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: NotIn
          values: ["kube-system", {{ .Release.Namespace | quote }}]
        {{- with .Values.webhook.namespaceSelector.matchExpressions }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    {{- with .Values.webhook.objectSelector }}
    objectSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end -}}

{{/*
Who makes the extender listener's certificates (tessera.tls): certManager, helm
(templates/extender-tls-selfsigned.yaml) or secret; "auto" as for the webhook.
*/}}
{{- define "tessera.extenderCertSource" -}}
{{- if ne .Values.tessera.tls.certificate.source "auto" -}}
{{- .Values.tessera.tls.certificate.source -}}
{{- else if .Capabilities.APIVersions.Has "cert-manager.io/v1" -}}
certManager
{{- else -}}
helm
{{- end -}}
{{- end -}}

{{/* The Secret with Tessera's serving certificate (tls.crt, tls.key) and the CA (ca.crt). */}}
{{- define "tessera.extenderSecretName" -}}
{{- if eq .Values.tessera.tls.certificate.source "secret" -}}
{{- required "tessera.tls.certificate.secretName is required with source secret" .Values.tessera.tls.certificate.secretName -}}
{{- else -}}
{{- include "tessera.fullname" . }}-extender-tls
{{- end -}}
{{- end -}}

{{/* The Secret with kube-scheduler's client certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "tessera.extenderClientSecretName" -}}
{{- if eq .Values.tessera.tls.certificate.source "secret" -}}
{{- required "tessera.tls.certificate.clientSecretName is required with source secret and clientAuth verbs or all" .Values.tessera.tls.certificate.clientSecretName -}}
{{- else -}}
{{- include "tessera.fullname" . }}-extender-client-tls
{{- end -}}
{{- end -}}

{{/* "true" when kube-scheduler must present a client certificate to Tessera. */}}
{{- define "tessera.extenderClientCert" -}}
{{- if and .Values.tessera.tls.enabled (ne .Values.tessera.tls.clientAuth "none") -}}
true
{{- end -}}
{{- end -}}

{{/*
Names, labels and the values several templates share. The templates keep to a
small part of Helm's template language (test/deploy/helm_template.h renders
that part in CI, where Helm is not installed): if/else/with/range/define,
fields of . and $, and the functions that file lists.
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

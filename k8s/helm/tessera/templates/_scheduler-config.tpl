{{/*
kube-scheduler's configuration: one profile, Tessera as its extender. A define
rather than inline in the ConfigMap, so the Deployment can carry its checksum
(kube-scheduler reads the file once; a change must roll the pods).
*/}}
{{- define "tessera.schedulerConfig" -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  # One active scheduler among the replicas; the lease is this scheduler's own.
  leaderElect: true
  resourceLock: leases
  resourceName: {{ include "tessera.leaseName" . }}
  resourceNamespace: {{ include "tessera.leaseNamespace" . }}
  leaseDuration: {{ .Values.kubeScheduler.leaderElection.leaseDuration }}
  renewDeadline: {{ .Values.kubeScheduler.leaderElection.renewDeadline }}
  retryPeriod: {{ .Values.kubeScheduler.leaderElection.retryPeriod }}
# Let Tessera see every feasible node, not a sample: the GPU that fits may be on
# any of them. Top level, as the per-profile field needs kube-scheduler 1.27.
percentageOfNodesToScore: 100
profiles:
  - schedulerName: {{ .Values.schedulerName }}
# Tessera in the same pod. It watches nodes and pods itself (nodeCacheCapable:
# names only, no Node objects on the wire) and binds: it reserves the GPUs,
# writes tessera.io/gpu-assignment, then creates the Binding.
extenders:
  {{- if .Values.tessera.tls.enabled }}
  # Over TLS (docs/operations/tls.md): Tessera's certificate checked against the
  # chart's CA, and with client auth kube-scheduler's own certificate shown.
  - urlPrefix: https://127.0.0.1:{{ .Values.tessera.port }}
    enableHTTPS: true
    tlsConfig:
      caFile: /etc/tessera-extender-ca/ca.crt
      {{- with .Values.tessera.tls.serverName }}
      serverName: {{ . }}
      {{- end }}
      {{- if include "tessera.extenderClientCert" . }}
      certFile: /etc/tessera-extender-client/tls.crt
      keyFile: /etc/tessera-extender-client/tls.key
      {{- end }}
  {{- else }}
  - urlPrefix: http://127.0.0.1:{{ .Values.tessera.port }}
  {{- end }}
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    # Without it kube-scheduler picks victims by priority alone, one pod per
    # GPU across nodes, and never asks which pods free one GPU (issue 42).
    preemptVerb: preempt
    weight: {{ .Values.extender.weight }}
    httpTimeout: {{ .Values.extender.httpTimeout }}
    nodeCacheCapable: true
    # Tessera decides every pod of this scheduler; without it nothing is placed.
    ignorable: false
    {{- with .Values.extender.managedResources }}
    managedResources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end -}}

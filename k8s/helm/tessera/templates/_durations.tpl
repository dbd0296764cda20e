{{/*
A duration as values.schema.json admits them (Go's: "15s", "1m30s", "1.5s",
"250ms"; units h, m, s, ms) in milliseconds. Helm has no duration parser, and
the schema cannot compare two values, so the templates that must refuse
renewDeadline >= leaseDuration or scrapeTimeout > interval compare these.
*/}}
{{- define "tessera.durationMillis" -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ms|h|m|s)" . -1 -}}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" . -}}
{{- $unit := trimPrefix $number . -}}
{{- $total = addf $total (mulf (float64 $number) (get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

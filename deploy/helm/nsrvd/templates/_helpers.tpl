{{- define "nsrvd.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nsrvd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "nsrvd.headless" -}}
{{- printf "%s-headless" (include "nsrvd.fullname" .) -}}
{{- end -}}

{{- define "nsrvd.keysSecret" -}}
{{- .Values.gossip.existingSecret | default (printf "%s-gossip-keys" (include "nsrvd.fullname" .)) -}}
{{- end -}}

{{- define "nsrvd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nsrvd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nsrvd.labels" -}}
{{ include "nsrvd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

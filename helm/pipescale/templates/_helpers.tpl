{{/* Names and labels shared by every object of the chart. */}}

{{- define "pipescale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The operator's objects are named <release>-pipescale unless the release name already says pipescale. */}}
{{- define "pipescale.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "pipescale.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pipescale.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "pipescale.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "pipescale.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: pipescale
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pipescale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pipescale.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pipescale.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* host:port for a listener; an empty listenAddress listens on every interface. */}}
{{- define "pipescale.bind" -}}
{{- printf "%s:%v" .root.Values.listenAddress .port }}
{{- end }}

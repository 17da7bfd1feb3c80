{{/*
Helpers of the toolgate chart. Kept to plain substitutions: no string functions, so that a
reader (and the chart's test) sees every name and label as it will be written.
*/}}

{{/* The app name: nameOverride, else the chart's name. */}}
{{- define "toolgate.name" -}}
{{- default .Chart.Name .Values.nameOverride }}
{{- end }}

{{/* The name of every resource: fullnameOverride, else the release name. */}}
{{- define "toolgate.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride }}
{{- end }}

{{/* Labels that select the pods: stable for the life of a release. */}}
{{- define "toolgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "toolgate.labels" -}}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{ include "toolgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The ConfigMap's data: the config map of values, then the OpenTelemetry variables when an
endpoint is set. Shared by the ConfigMap and the Deployment's checksum annotation.
*/}}
{{- define "toolgate.configData" -}}
{{- with .Values.config }}
{{- toYaml . }}
{{- end }}
{{- if .Values.otel.endpoint }}
OTEL_EXPORTER_OTLP_ENDPOINT: {{ .Values.otel.endpoint | quote }}
OTEL_EXPORTER_OTLP_PROTOCOL: {{ .Values.otel.protocol | quote }}
OTEL_SERVICE_NAME: {{ .Values.otel.serviceName | quote }}
{{- end }}
{{- end }}

{{/* the manifests' text with the install namespace in place of trainsched-system */}}
{{- define "trainsched.file" -}}
{{- $ctx := index . 0 -}}
{{- $text := $ctx.Files.Get (index . 1) -}}
{{- if not $text }}{{ fail (printf "chart file %s is missing (files/ links to manifests/)" (index . 1)) }}{{ end -}}
{{- $text | replace "namespace: trainsched-system" (printf "namespace: %s" $ctx.Release.Namespace) -}}
{{- end -}}

{{- define "trainsched.components" -}}
{{- $c := list -}}
{{- if .Values.components.reconciler }}{{ $c = append $c "reconciler" }}{{ end -}}
{{- if .Values.components.webhook }}{{ $c = append $c "webhook" }}{{ end -}}
{{- if not $c }}{{ fail "components: enable reconciler or webhook (the extender is kube-scheduler's sidecar)" }}{{ end -}}
[{{ join ", " $c }}]
{{- end -}}

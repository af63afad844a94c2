{{/* Chart name. */}}
{{- define "linkmesh.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" }}
{{- end }}

{{/*
Release-wide name prefix, at most 40 characters so that "<fullname>-moderation-metrics"
(19 more) stays within the 63 of a Service name.
*/}}
{{- define "linkmesh.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "linkmesh.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The contract as a dict, and the list of services. */}}
{{- define "linkmesh.contractOf" -}}
{{- include "linkmesh.contract" . | fromYaml | toJson }}
{{- end }}

{{/* Labels every resource carries. Takes the root context. */}}
{{- define "linkmesh.labels" -}}
helm.sh/chart: {{ include "linkmesh.chart" . }}
app.kubernetes.io/name: {{ include "linkmesh.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: linkmesh
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of one service's resources. Takes (dict "root" $ "name" <service>). */}}
{{- define "linkmesh.serviceLabels" -}}
{{ include "linkmesh.labels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/* Selector of one service's pods. Takes (dict "root" $ "name" <service>). */}}
{{- define "linkmesh.selectorLabels" -}}
app.kubernetes.io/name: {{ include "linkmesh.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/* Name of one service's resources: <fullname>-<service>. */}}
{{- define "linkmesh.serviceName" -}}
{{- printf "%s-%s" (include "linkmesh.fullname" .root) .name }}
{{- end }}

{{/* Base URL of a service for its peers. Takes (dict "root" $ "name" <service>). */}}
{{- define "linkmesh.serviceURL" -}}
{{- $svc := index .root.Values.services .name }}
{{- printf "http://%s:%d" (include "linkmesh.serviceName" .) (int $svc.service.port) }}
{{- end }}

{{/* Image tag of a service (its service.version). Takes (dict "root" $ "name" <service>). */}}
{{- define "linkmesh.imageTag" -}}
{{- (index .root.Values.services .name).image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion }}
{{- end }}

{{/* Image reference of a service. Takes (dict "root" $ "name" <service>). */}}
{{- define "linkmesh.image" -}}
{{- $img := (index .root.Values.services .name).image }}
{{- $repo := $img.repository | default (printf "%s/%s" .root.Values.image.repository .name) }}
{{- if .root.Values.image.registry }}
{{- $repo = printf "%s/%s" .root.Values.image.registry $repo }}
{{- end }}
{{- $tag := include "linkmesh.imageTag" . }}
{{- if $img.digest }}
{{- printf "%s:%s@%s" $repo $tag $img.digest }}
{{- else }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}
{{- end }}

{{/* Name of the Secret every service reads its secret keys from. */}}
{{- define "linkmesh.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "linkmesh.fullname" .) }}
{{- end }}

{{/*
The data of the chart's Secret (when no existingSecret), base64-encoded, as YAML. What values do
not give is taken from the Secret already in the cluster (lookup; empty under `helm template`)
or else generated: so it is made once, at install, and kept by every upgrade (the Secret also
carries helm.sh/resource-policy: keep).

- LINKMESH_IDENTITY_SECRET: 48 random characters.
- LINKMESH_WEBHOOK_KEY: 48 random characters.
- The internal key material, as a whole: each service's Ed25519 private key
  (LINKMESH_INTERNAL_KEY_<SERVICE>, genPrivateKey) and LINKMESH_INTERNAL_CERTS, the six
  certificates made with them (genSelfSignedCertWithKey, common name = the service). Keys and
  certificates are given together, kept together or generated together, never mixed: a Secret
  holding only some of them is refused rather than completed with keys that match no
  certificate.
*/}}
{{- define "linkmesh.secretData" -}}
{{- $root := . }}
{{- $existing := dig "data" dict (lookup "v1" "Secret" .Release.Namespace (include "linkmesh.fullname" .) | default dict) }}
{{- $keys := include "linkmesh.secretKeys" . | fromYaml }}
{{- $data := dict }}
{{- range $key, $spec := $keys }}
{{- $value := index $root.Values.secrets $spec.value }}
{{- if $spec.service }}
{{- $value = index $value $spec.service }}
{{- end }}
{{- if $value }}
{{- $_ := set $data $key $value }}
{{- end }}
{{- end }}
{{- if not $data.LINKMESH_IDENTITY_SECRET }}
{{- $_ := set $data "LINKMESH_IDENTITY_SECRET" (index $existing "LINKMESH_IDENTITY_SECRET" | default "" | b64dec | default (randAlphaNum 48)) }}
{{- end }}
{{- if not $data.LINKMESH_WEBHOOK_KEY }}
{{- $_ := set $data "LINKMESH_WEBHOOK_KEY" (index $existing "LINKMESH_WEBHOOK_KEY" | default "" | b64dec | default (randAlphaNum 48)) }}
{{- end }}
{{- /* Unless given in values (all of it: linkmesh.validate checks), kept or generated as a whole. */}}
{{- if not $data.LINKMESH_INTERNAL_CERTS }}
{{- $material := list }}
{{- $kept := list }}
{{- range $key, $spec := $keys }}
{{- if has $spec.variable (list "LINKMESH_INTERNAL_KEY" "LINKMESH_INTERNAL_CERTS") }}
{{- $material = append $material $key }}
{{- if index $existing $key }}
{{- $kept = append $kept $key }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq (len $kept) (len $material) }}
{{- range $key := $kept }}
{{- $_ := set $data $key (index $existing $key | b64dec) }}
{{- end }}
{{- else if $kept }}
{{- fail (printf "the Secret %s/%s holds only some of the internal key material (%s of %s): restore the missing keys, or delete all of them to have new ones generated" $root.Release.Namespace (include "linkmesh.fullname" $root) (join ", " $kept) (join ", " $material)) }}
{{- else }}
{{- $certs := "" }}
{{- range $name := include "linkmesh.serviceNames" . | fromYamlArray }}
{{- $private := genPrivateKey "ed25519" }}
{{- $cert := genSelfSignedCertWithKey $name nil nil 36500 $private }}
{{- $_ := set $data (include "linkmesh.secretKey" (dict "root" $root "name" $name "variable" "LINKMESH_INTERNAL_KEY")) $private }}
{{- $certs = print $certs $cert.Cert }}
{{- end }}
{{- $_ := set $data "LINKMESH_INTERNAL_CERTS" $certs }}
{{- end }}
{{- end }}
{{- range $key, $value := $data }}
{{ $key }}: {{ $value | b64enc | quote }}
{{- end }}
{{- end }}

{{/*
What the pods' checksum/secret annotation hashes: the secret values (never the generated ones,
which do not change) or, with an existingSecret, that Secret's data as the cluster has it, so
a changed Secret rolls the pods on the next upgrade.
*/}}
{{- define "linkmesh.secretChecksum" -}}
{{- if .Values.secrets.existingSecret }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace .Values.secrets.existingSecret | default dict }}
{{- printf "%s/%s/%s" .Values.secrets.existingSecret .Values.secrets.revision (dig "data" dict $existing | toJson) | sha256sum }}
{{- else }}
{{- toJson .Values.secrets | sha256sum }}
{{- end }}
{{- end }}

{{/*
Refuses values that would render, but not run: checked once, from NOTES.txt and every
Deployment.
*/}}
{{- define "linkmesh.validate" -}}
{{- $v := .Values }}
{{- $drain := int $v.config.shutdownDrainSeconds }}
{{- if le (int $v.terminationGracePeriodSeconds) (add $drain (int $v.shutdownTimeoutSeconds)) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be greater than config.shutdownDrainSeconds (%d) + shutdownTimeoutSeconds (%d): the pod would be killed before it has drained and closed" (int $v.terminationGracePeriodSeconds) $drain (int $v.shutdownTimeoutSeconds)) }}
{{- end }}
{{- if and (or $v.ingress.enabled $v.httpRoute.enabled) (not $v.config.trustedProxies) }}
{{- fail "config.trustedProxies is required with ingress.enabled or httpRoute.enabled: behind a proxy every client arrives from the proxy's address, so without the proxy's ranges all clients share one identity (one anonymous quota, one report budget, one login window). Give the CIDRs your ingress controller's pods or load balancer connect from; the chart README lists them for the common controllers" }}
{{- end }}
{{- if and $v.mesh.istio.enabled $v.mesh.linkerd.enabled }}
{{- fail "mesh.istio.enabled and mesh.linkerd.enabled: choose one service mesh" }}
{{- end }}
{{- if and $v.serviceMonitor.enabled (not $v.metrics.enabled) }}
{{- fail "serviceMonitor.enabled needs metrics.enabled" }}
{{- end }}
{{- if lt (int $v.config.loginMaxFailuresPerEmail) (int $v.config.loginMaxFailures) }}
{{- fail (printf "config.loginMaxFailuresPerEmail (%d) must be at least config.loginMaxFailures (%d): the quota service would not start" (int $v.config.loginMaxFailuresPerEmail) (int $v.config.loginMaxFailures)) }}
{{- end }}
{{- if lt (int $v.config.loginMaxFailuresPerClient) (int $v.config.loginMaxFailures) }}
{{- fail (printf "config.loginMaxFailuresPerClient (%d) must be at least config.loginMaxFailures (%d): the quota service would not start" (int $v.config.loginMaxFailuresPerClient) (int $v.config.loginMaxFailures)) }}
{{- end }}
{{- if eq (int $v.metrics.port) (int $v.containerPort) }}
{{- fail "metrics.port must differ from containerPort" }}
{{- end }}
{{- $needImage := list }}
{{- range $name := include "linkmesh.serviceNames" . | fromYamlArray }}
{{- if not (or $v.image.repository (index $v.services $name).image.repository) }}
{{- $needImage = append $needImage $name }}
{{- end }}
{{- end }}
{{- if $needImage }}
{{- fail (printf "image.repository is required (or services.<name>.image.repository for %s): the images are not published; build and push them to your registry (make images; skaffold build -p prod --default-repo=<registry>/<path>) and give its path" (join ", " $needImage)) }}
{{- end }}
{{- if not $v.secrets.existingSecret }}
{{- if not $v.secrets.generate }}
{{- $missing := list }}
{{- range $key := list "identitySecret" "webhookKey" "internalCerts" }}
{{- if not (index $v.secrets $key) }}
{{- $missing = append $missing (printf "secrets.%s" $key) }}
{{- end }}
{{- end }}
{{- if $missing }}
{{- fail (printf "the chart's keys need a source: set secrets.existingSecret (a Secret you create, the GitOps way: Argo CD renders with helm template and cannot keep generated keys), or secrets.generate=true (helm install/upgrade only: generated once, kept through lookup), or give %s in values" (join ", " $missing)) }}
{{- end }}
{{- end }}
{{- if and $v.secrets.identitySecret (lt (len $v.secrets.identitySecret) 32) }}
{{- fail "secrets.identitySecret must be at least 32 characters" }}
{{- end }}
{{- if and $v.secrets.webhookKey (lt (len $v.secrets.webhookKey) 32) }}
{{- fail "secrets.webhookKey must be at least 32 characters" }}
{{- end }}
{{- $names := include "linkmesh.serviceNames" . | fromYamlArray }}
{{- $given := list }}
{{- $missing := list }}
{{- range $name := $names }}
{{- if index $v.secrets.internalKeys $name }}
{{- $given = append $given (printf "secrets.internalKeys.%s" $name) }}
{{- else }}
{{- $missing = append $missing (printf "secrets.internalKeys.%s" $name) }}
{{- end }}
{{- end }}
{{- if $v.secrets.internalCerts }}
{{- $given = append $given "secrets.internalCerts" }}
{{- else }}
{{- $missing = append $missing "secrets.internalCerts" }}
{{- end }}
{{- if and $given $missing }}
{{- fail (printf "secrets.internalKeys (all six services) and secrets.internalCerts are given together, or none of them to have them generated: %s given, but not %s" (join ", " $given) (join ", " $missing)) }}
{{- end }}
{{- $certs := len (regexFindAll "-----BEGIN CERTIFICATE-----" $v.secrets.internalCerts -1) }}
{{- if and $v.secrets.internalCerts (lt $certs (len $names)) }}
{{- fail (printf "secrets.internalCerts holds %d certificates; it needs one for each of the %d services" $certs (len $names)) }}
{{- end }}
{{- if $v.secrets.credentialsPerService }}
{{- $contract := include "linkmesh.contractOf" . | fromJson }}
{{- range $name := $names }}
{{- if and (index $contract $name).mongodb (not (index $v.secrets.mongodbURIs $name)) }}
{{- fail (printf "secrets.mongodbURIs.%s is required with secrets.credentialsPerService (or secrets.existingSecret)" $name) }}
{{- end }}
{{- if and (has "LINKMESH_REDIS_URL" (index $contract $name).secrets) (not (index $v.secrets.redisURLs $name)) }}
{{- fail (printf "secrets.redisURLs.%s is required with secrets.credentialsPerService (or secrets.existingSecret)" $name) }}
{{- end }}
{{- end }}
{{- else }}
{{- if not $v.secrets.mongodbURI }}
{{- fail "secrets.mongodbURI is required (or secrets.existingSecret)" }}
{{- end }}
{{- if not $v.secrets.redisURL }}
{{- fail "secrets.redisURL is required (or secrets.existingSecret)" }}
{{- end }}
{{- end }}
{{- range $pair := list (list "bootstrapAdminEmail" "bootstrapAdminPassword") (list "captchaVerifyURL" "captchaSecret") (list "oidcIssuer" "oidcClientID") }}
{{- if ne (empty (index $v.secrets (first $pair))) (empty (index $v.secrets (last $pair))) }}
{{- fail (printf "secrets.%s and secrets.%s must be set together" (first $pair) (last $pair)) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $svc := $v.services }}
{{- if and $svc.autoscaling.enabled (lt (int $svc.autoscaling.maxReplicas) (int $svc.autoscaling.minReplicas)) }}
{{- fail (printf "services.%s.autoscaling.maxReplicas must be at least minReplicas" $name) }}
{{- end }}
{{- end }}
{{- end }}

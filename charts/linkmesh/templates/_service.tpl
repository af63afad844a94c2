{{/*
The resources of one service, shared by all six. Every template takes
(dict "root" $ "name" <service>) and is called from a range over linkmesh.serviceNames in the
files of this folder.
*/}}

{{/* The data of a service's ConfigMap: only the variables that service reads. */}}
{{- define "linkmesh.configData" -}}
{{- $root := .root }}
{{- $v := $root.Values }}
{{- $c := index (include "linkmesh.contractOf" $root | fromJson) .name }}
{{- $vars := include "linkmesh.settingVariables" $root | fromYaml }}
LINKMESH_LISTEN_ADDR: {{ printf "0.0.0.0:%d" (int $v.containerPort) | quote }}
{{- if $v.metrics.enabled }}
LINKMESH_METRICS_ADDR: {{ printf "0.0.0.0:%d" (int $v.metrics.port) | quote }}
{{- end }}
{{- range $key := concat (include "linkmesh.commonSettings" $root | fromYamlArray) $c.settings }}
{{- $value := index $v.config $key }}
{{- if eq $key "shutdownDrainSeconds" }}
{{- $value = printf "%ds" (int $value) }}
{{- else if kindIs "slice" $value }}
{{- $value = join "," $value }}
{{- else if kindIs "float64" $value }}
{{- $value = printf "%d" (int64 $value) }}
{{- else if kindIs "int64" $value }}
{{- $value = printf "%d" $value }}
{{- end }}
{{- if or (kindIs "bool" $value) (ne (toString $value) "") }}
{{ index $vars $key }}: {{ toString $value | quote }}
{{- end }}
{{- end }}
{{- if eq .name "gateway" }}
LINKMESH_CLICK_SPOOL: {{ include "linkmesh.clickSpoolDir" $root | printf "%s/clicks.spool" | quote }}
{{- end }}
{{- if $c.mongodb }}
LINKMESH_MONGODB_DATABASE: {{ (index $v.services .name).mongodbDatabase | default (printf "linkmesh_%s" .name) | quote }}
{{- end }}
{{- range $peer := $c.calls }}
LINKMESH_{{ upper $peer }}_URL: {{ include "linkmesh.serviceURL" (dict "root" $root "name" $peer) | quote }}
{{- end }}
{{- with $v.otel.endpoint }}
OTEL_EXPORTER_OTLP_ENDPOINT: {{ . | quote }}
{{- end }}
OTEL_TRACES_SAMPLER: {{ $v.otel.sampler | quote }}
OTEL_TRACES_SAMPLER_ARG: {{ $v.otel.samplerArg | toString | quote }}
{{- end }}

{{- define "linkmesh.configMap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "linkmesh.serviceName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
data:
  {{- include "linkmesh.configData" . | nindent 2 }}
{{- end }}

{{- define "linkmesh.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "linkmesh.serviceName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
  {{- with .root.Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
# The services never call the Kubernetes API.
automountServiceAccountToken: false
{{- end }}

{{/*
The Service peers (and, for the gateway, the Ingress or HTTPRoute) reach: the `http` port only.
Metrics are published by a Service of their own (linkmesh.metricsService), so that exposing
this one (a LoadBalancer gateway, an Ingress, an HTTPRoute) can never expose /metrics.
*/}}
{{- define "linkmesh.service" -}}
{{- $svc := index .root.Values.services .name }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "linkmesh.serviceName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
  {{- with $svc.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $svc.service.type | default "ClusterIP" }}
  selector:
    {{- include "linkmesh.selectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ $svc.service.port }}
      targetPort: http
      protocol: TCP
      appProtocol: http
{{- end }}

{{/* Headless: Prometheus scrapes each pod, never a load-balanced address. */}}
{{- define "linkmesh.metricsService" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "linkmesh.serviceName" . }}-metrics
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
    linkmesh.io/metrics: "true"
spec:
  type: ClusterIP
  clusterIP: None
  selector:
    {{- include "linkmesh.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .root.Values.metrics.port }}
      targetPort: metrics
      protocol: TCP
      appProtocol: http
{{- end }}

{{/* Pod annotations of a service: checksums, mesh, then the user's. */}}
{{- define "linkmesh.podAnnotations" -}}
{{- $v := .root.Values }}
{{- $svc := index $v.services .name }}
checksum/config: {{ include "linkmesh.configData" . | sha256sum }}
checksum/secret: {{ include "linkmesh.secretChecksum" .root }}
{{- if $v.mesh.istio.enabled }}
sidecar.istio.io/inject: "true"
sidecar.istio.io/rewriteAppHTTPProbers: "true"
proxy.istio.io/config: {{ dict "holdApplicationUntilProxyStarts" true "terminationDrainDuration" (printf "%ds" (add (int $v.config.shutdownDrainSeconds) (int $v.shutdownTimeoutSeconds))) | toJson | quote }}
{{- if $v.metrics.enabled }}
traffic.sidecar.istio.io/excludeInboundPorts: {{ $v.metrics.port | toString | quote }}
{{- end }}
{{- end }}
{{- if $v.mesh.linkerd.enabled }}
linkerd.io/inject: enabled
{{- if $v.mesh.linkerd.nativeSidecar }}
config.beta.linkerd.io/proxy-enable-native-sidecar: "true"
{{- else }}
{{- /* Without a native sidecar, the proxy stays for the drain and the close (the gateway's
last click-spool flush happens in the close), both within the grace period. */}}
config.alpha.linkerd.io/proxy-wait-before-exit-seconds: {{ add (int $v.config.shutdownDrainSeconds) (int $v.shutdownTimeoutSeconds) | toString | quote }}
{{- end }}
{{- if $v.metrics.enabled }}
config.linkerd.io/skip-inbound-ports: {{ $v.metrics.port | toString | quote }}
{{- end }}
{{- end }}
{{- with $v.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- with $svc.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The secretKeyRefs of a service: only the variables it reads, only those that are set, each from
its key of the Secret (linkmesh.secretKey: a per-service variable such as LINKMESH_INTERNAL_KEY
from this service's own key, never another's).
*/}}
{{- define "linkmesh.secretEnv" -}}
{{- $root := .root }}
{{- $name := .name }}
{{- $c := index (include "linkmesh.contractOf" $root | fromJson) $name }}
{{- $vars := include "linkmesh.secretVariables" $root | fromYaml }}
{{- $existing := $root.Values.secrets.existingSecret }}
{{- range $var := $c.secrets }}
{{- $spec := index $vars $var }}
{{- if or $existing $spec.required (index $root.Values.secrets $spec.value) }}
- name: {{ $var }}
  valueFrom:
    secretKeyRef:
      name: {{ include "linkmesh.secretName" $root }}
      key: {{ include "linkmesh.secretKey" (dict "root" $root "name" $name "variable" $var) }}
      {{- if not $spec.required }}
      optional: true
      {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "linkmesh.deployment" -}}
{{- $root := .root }}
{{- $v := $root.Values }}
{{- $svc := index $v.services .name }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "linkmesh.serviceName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
spec:
  {{- if not $svc.autoscaling.enabled }}
  replicas: {{ $svc.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "linkmesh.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "linkmesh.serviceLabels" . | nindent 8 }}
        {{- if $v.mesh.istio.enabled }}
        sidecar.istio.io/inject: "true"
        {{- end }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $svc.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        {{- include "linkmesh.podAnnotations" . | nindent 8 }}
    spec:
      serviceAccountName: {{ include "linkmesh.serviceName" . }}
      automountServiceAccountToken: false
      # No <SERVICE>_PORT variables: the services read only their own settings.
      enableServiceLinks: false
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- include "linkmesh.podSecurityContext" . | nindent 8 }}
      # The service fails readiness for LINKMESH_SHUTDOWN_DRAIN after SIGTERM, then closes;
      # the chart refuses a grace period that leaves no room for both.
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      {{- with $svc.priorityClassName | default $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $svc.nodeSelector | default $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $svc.tolerations | default $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with include "linkmesh.affinity" . | fromYaml }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with concat $v.initContainers $svc.initContainers }}
      initContainers:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- range . }}
        - topologyKey: {{ .topologyKey }}
          maxSkew: {{ .maxSkew }}
          whenUnsatisfiable: {{ .whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- include "linkmesh.selectorLabels" $ | nindent 14 }}
          matchLabelKeys:
            - pod-template-hash
        {{- end }}
      {{- end }}
      containers:
        - name: {{ .name }}
          image: {{ include "linkmesh.image" . }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          securityContext:
            {{- include "linkmesh.containerSecurityContext" . | nindent 12 }}
          ports:
            - name: http
              containerPort: {{ $v.containerPort }}
              protocol: TCP
            {{- if $v.metrics.enabled }}
            - name: metrics
              containerPort: {{ $v.metrics.port }}
              protocol: TCP
            {{- end }}
          envFrom:
            - configMapRef:
                name: {{ include "linkmesh.serviceName" . }}
            {{- with concat $v.extraEnvFrom $svc.extraEnvFrom }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          env:
            {{- include "linkmesh.secretEnv" . | nindent 12 }}
            {{- include "linkmesh.otelEnv" . | nindent 12 }}
            {{- with concat $v.extraEnv $svc.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- with $svc.lifecycle | default $v.lifecycle }}
          lifecycle:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          startupProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: {{ $v.probes.startup.periodSeconds }}
            failureThreshold: {{ $v.probes.startup.failureThreshold }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            initialDelaySeconds: {{ $v.probes.liveness.initialDelaySeconds }}
            periodSeconds: {{ $v.probes.liveness.periodSeconds }}
            timeoutSeconds: {{ $v.probes.liveness.timeoutSeconds }}
            failureThreshold: {{ $v.probes.liveness.failureThreshold }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            initialDelaySeconds: {{ $v.probes.readiness.initialDelaySeconds }}
            periodSeconds: {{ $v.probes.readiness.periodSeconds }}
            timeoutSeconds: {{ $v.probes.readiness.timeoutSeconds }}
            failureThreshold: {{ $v.probes.readiness.failureThreshold }}
          resources:
            {{- toYaml $svc.resources | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if eq .name "gateway" }}
            - name: click-spool
              mountPath: {{ include "linkmesh.clickSpoolDir" $root }}
            {{- end }}
            {{- include "linkmesh.otelVolumeMounts" $root | nindent 12 }}
            {{- with concat $v.extraVolumeMounts $svc.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
        {{- with concat $v.extraContainers $svc.extraContainers }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      volumes:
        # The root file system is read-only; /tmp is the one writable place.
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- if eq .name "gateway" }}
        # The visits answered and not yet on the clicks stream (LINKMESH_CLICK_SPOOL): in
        # memory, since they hold client addresses, and kept when the container restarts, so
        # a gateway killed by the OOM killer or a failed probe loses none of its clicks.
        - name: click-spool
          emptyDir:
            medium: Memory
            sizeLimit: {{ add (int $v.config.clickSpoolMB) 1 }}Mi
        {{- end }}
        {{- include "linkmesh.otelVolumes" $root | nindent 8 }}
        {{- with concat $v.extraVolumes $svc.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}

{{/*
A service's affinity: its own, else the global one, else the podAntiAffinityPreset (soft:
prefer nodes without a pod of the same service; hard: require them).
*/}}
{{- define "linkmesh.affinity" -}}
{{- $v := .root.Values }}
{{- $svc := index $v.services .name }}
{{- $given := $svc.affinity | default $v.affinity }}
{{- if $given }}
{{- toYaml $given }}
{{- else if ne $v.podAntiAffinityPreset "none" }}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "linkmesh.selectorLabels" . | fromYaml)) }}
podAntiAffinity:
{{- if eq $v.podAntiAffinityPreset "hard" }}
  requiredDuringSchedulingIgnoredDuringExecution:
    - {{- toYaml $term | nindent 6 }}
{{- else }}
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        {{- toYaml $term | nindent 8 }}
{{- end }}
{{- end }}
{{- end }}

{{/* Where the gateway's click spool is mounted. */}}
{{- define "linkmesh.clickSpoolDir" -}}
/var/spool/linkmesh
{{- end }}

{{/*
Pod and container security contexts, shared by the services and the test pod: each takes
(dict "root" $ "name" <service or "">). The restricted default, then the global
podSecurityContext/containerSecurityContext, then the service's, merged; with openshift, the
UID, GID and fsGroup are left to the platform.
*/}}
{{- define "linkmesh.podSecurityContext" -}}
{{- $v := .root.Values }}
{{- $sc := dict "runAsNonRoot" true "runAsUser" $v.runAsUser "runAsGroup" $v.runAsGroup "fsGroup" $v.runAsGroup "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- $sc = mergeOverwrite $sc (deepCopy $v.podSecurityContext) }}
{{- with .name }}
{{- $sc = mergeOverwrite $sc (deepCopy (index $v.services . "podSecurityContext" | default dict)) }}
{{- end }}
{{- if $v.openshift }}
{{- $sc = omit $sc "runAsUser" "runAsGroup" "fsGroup" }}
{{- end }}
{{- toYaml $sc }}
{{- end }}

{{- define "linkmesh.containerSecurityContext" -}}
{{- $v := .root.Values }}
{{- $sc := dict "runAsNonRoot" true "runAsUser" $v.runAsUser "runAsGroup" $v.runAsGroup "readOnlyRootFilesystem" true "allowPrivilegeEscalation" false "privileged" false "capabilities" (dict "drop" (list "ALL")) "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- $sc = mergeOverwrite $sc (deepCopy $v.containerSecurityContext) }}
{{- with .name }}
{{- $sc = mergeOverwrite $sc (deepCopy (index $v.services . "containerSecurityContext" | default dict)) }}
{{- end }}
{{- if $v.openshift }}
{{- $sc = omit $sc "runAsUser" "runAsGroup" }}
{{- end }}
{{- toYaml $sc }}
{{- end }}

{{/*
OpenTelemetry resource attributes from the downward API and the chart, and the OTLP headers
and TLS material from Secrets (otel.headers, otel.tls); each service adds its service.name.
*/}}
{{- define "linkmesh.otelEnv" -}}
{{- $root := .root }}
{{- $v := $root.Values }}
- name: K8S_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: K8S_POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
- name: K8S_NAMESPACE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: K8S_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.pod.name=$(K8S_POD_NAME),k8s.pod.uid=$(K8S_POD_UID),k8s.namespace.name=$(K8S_NAMESPACE_NAME),k8s.node.name=$(K8S_NODE_NAME),k8s.deployment.name=%s,service.version=%s,service.instance.id=$(K8S_POD_UID),helm.chart=%s" (include "linkmesh.serviceName" .) (include "linkmesh.imageTag" .) (include "linkmesh.chart" $root) | quote }}
{{- with $v.otel.headers.secretName }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $v.otel.headers.key }}
{{- end }}
{{- if $v.otel.tls.secretName }}
- name: OTEL_EXPORTER_OTLP_CERTIFICATE
  value: {{ include "linkmesh.otelTLSDir" $root }}/ca.crt
{{- if $v.otel.tls.clientCertificate }}
- name: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE
  value: {{ include "linkmesh.otelTLSDir" $root }}/tls.crt
- name: OTEL_EXPORTER_OTLP_CLIENT_KEY
  value: {{ include "linkmesh.otelTLSDir" $root }}/tls.key
{{- end }}
{{- end }}
{{- end }}

{{- define "linkmesh.otelTLSDir" -}}
/etc/linkmesh/otlp-tls
{{- end }}

{{- define "linkmesh.otelVolumeMounts" -}}
{{- if .Values.otel.tls.secretName }}
- name: otlp-tls
  mountPath: {{ include "linkmesh.otelTLSDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "linkmesh.otelVolumes" -}}
{{- with .Values.otel.tls.secretName }}
- name: otlp-tls
  secret:
    secretName: {{ . }}
{{- end }}
{{- end }}

{{- define "linkmesh.hpa" -}}
{{- $svc := index .root.Values.services .name }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "linkmesh.serviceName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "linkmesh.serviceName" . }}
  {{- with $svc.autoscaling.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  minReplicas: {{ $svc.autoscaling.minReplicas }}
  maxReplicas: {{ $svc.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $svc.autoscaling.targetCPUUtilizationPercentage }}
    {{- with $svc.autoscaling.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
{{- end }}

{{- define "linkmesh.pdb" -}}
{{- $svc := index .root.Values.services .name }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "linkmesh.serviceName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
spec:
  maxUnavailable: {{ $svc.podDisruptionBudget.maxUnavailable }}
  # A pod that is not ready serves nothing: evicting it never costs availability.
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "linkmesh.selectorLabels" . | nindent 6 }}
{{- end }}

{{/*
A service's NetworkPolicy. It adds to the release's default deny: `http` from the services
that call this one (the gateway: from networkPolicy.gateway.from), `metrics` from Prometheus;
out to the services it calls, its datastores, DNS, the OTLP collector (when tracing is on), the
mesh's control plane (when a mesh is on) and the service's extraEgress.
*/}}
{{- define "linkmesh.networkPolicy" -}}
{{- $root := .root }}
{{- $v := $root.Values }}
{{- $np := $v.networkPolicy }}
{{- $name := .name }}
{{- $svc := index $v.services $name }}
{{- $contract := include "linkmesh.contractOf" $root | fromJson }}
{{- $c := index $contract $name }}
{{- $callers := list }}
{{- range $other := include "linkmesh.serviceNames" $root | fromYamlArray }}
{{- if has $name (index $contract $other).calls }}
{{- $callers = append $callers $other }}
{{- end }}
{{- end }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "linkmesh.serviceName" . }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "linkmesh.serviceLabels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "linkmesh.selectorLabels" . | nindent 6 }}
  policyTypes:
    - Ingress
    - Egress
  ingress:
    {{- if eq $name "gateway" }}
    - ports:
        - port: http
          protocol: TCP
      {{- with $np.gateway.from }}
      from:
        {{- toYaml . | nindent 8 }}
        {{- /* the helm test pod */}}
        - podSelector:
            matchLabels:
              {{- include "linkmesh.selectorLabels" (dict "root" $root "name" "test") | nindent 14 }}
      {{- end }}
    {{- else if $callers }}
    - ports:
        - port: http
          protocol: TCP
      from:
        {{- range $callers }}
        - podSelector:
            matchLabels:
              {{- include "linkmesh.selectorLabels" (dict "root" $root "name" .) | nindent 14 }}
        {{- end }}
    {{- end }}
    {{- if $v.metrics.enabled }}
    - ports:
        - port: metrics
          protocol: TCP
      {{- with $np.metrics.from }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
  egress:
    - to:
        {{- toYaml $np.dns.to | nindent 8 }}
      ports:
        {{- toYaml $np.dns.ports | nindent 8 }}
    {{- range $c.calls }}
    - to:
        - podSelector:
            matchLabels:
              {{- include "linkmesh.selectorLabels" (dict "root" $root "name" .) | nindent 14 }}
      ports:
        - port: http
          protocol: TCP
    {{- end }}
    {{- if $c.mongodb }}
    - ports:
        {{- toYaml $np.mongodb.ports | nindent 8 }}
      {{- with $np.mongodb.to }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- if has "LINKMESH_REDIS_URL" $c.secrets }}
    - ports:
        {{- toYaml $np.redis.ports | nindent 8 }}
      {{- with $np.redis.to }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- if $v.otel.endpoint }}
    - ports:
        {{- toYaml $np.otlp.ports | nindent 8 }}
      {{- with $np.otlp.to }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- range $mesh := list "istio" "linkerd" }}
    {{- $m := index $v.mesh $mesh }}
    {{- if $m.enabled }}
    - ports:
        {{- toYaml $m.controlPlane.ports | nindent 8 }}
      {{- with $m.controlPlane.to }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- end }}
    {{- with $svc.extraEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

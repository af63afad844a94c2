{{/*
What the code of each service needs, in one place: the peers it calls over HTTP (the
env.Peer(pkgconfig.<Svc>, ...) calls in services/<svc>/internal/app/*.go), whether it owns a
MongoDB database, the secret variables (see linkmesh.secretVariables; each is read from the
Secret key linkmesh.secretKey names) and the settings (keys of .Values.config) it reads. The
peer URL variables, the NetworkPolicies, the ConfigMaps and the secretKeyRefs are all derived
from it; tests/chart checks it against the code and the README's settings table.

Services are listed in the order of their default local ports.
*/}}
{{- define "linkmesh.contract" -}}
gateway:
  calls: [auth, link, moderation]
  mongodb: false
  secrets: [LINKMESH_INTERNAL_KEY, LINKMESH_INTERNAL_CERTS, LINKMESH_REDIS_URL, LINKMESH_IDENTITY_SECRET, LINKMESH_CAPTCHA_VERIFY_URL, LINKMESH_CAPTCHA_SECRET]
  settings: [baseURL, trustedProxies, redirectCacheSize, clickQueue, clickSpoolMB, geoipDB, cookieSecure, captchaSiteKey, captchaScriptURL]
auth:
  calls: [quota, moderation, link]
  mongodb: true
  secrets: [LINKMESH_INTERNAL_KEY, LINKMESH_INTERNAL_CERTS, LINKMESH_MONGODB_URI, LINKMESH_BOOTSTRAP_ADMIN_EMAIL, LINKMESH_BOOTSTRAP_ADMIN_PASSWORD, LINKMESH_OIDC_ISSUER, LINKMESH_OIDC_CLIENT_ID, LINKMESH_SMTP_URL]
  settings: [baseURL, sessionTTL, loginRecordRetention, oidcJWKSURL, oidcAuthorizationURL, mailFrom, emailVerification]
link:
  calls: [quota, analytics, moderation]
  mongodb: true
  secrets: [LINKMESH_INTERNAL_KEY, LINKMESH_INTERNAL_CERTS, LINKMESH_REDIS_URL, LINKMESH_MONGODB_URI, LINKMESH_WEBHOOK_KEY]
  settings: [baseURL, dnsTimeout, dnsServer, dnsCacheTTL, dnsNegativeTTL, webhookAllowedCIDRs, webhookRetryBase]
analytics:
  calls: []
  mongodb: true
  secrets: [LINKMESH_INTERNAL_KEY, LINKMESH_INTERNAL_CERTS, LINKMESH_REDIS_URL, LINKMESH_MONGODB_URI]
  settings: [clickRetention, clickBudget, clickBudgetWindow]
moderation:
  calls: [link, auth, analytics, quota]
  mongodb: true
  secrets: [LINKMESH_INTERNAL_KEY, LINKMESH_INTERNAL_CERTS, LINKMESH_MONGODB_URI]
  settings: []
quota:
  calls: []
  mongodb: true
  secrets: [LINKMESH_INTERNAL_KEY, LINKMESH_INTERNAL_CERTS, LINKMESH_REDIS_URL, LINKMESH_MONGODB_URI]
  settings: [anonQuota, anonWindow, userWindow, loginMaxFailures, loginMaxFailuresPerEmail, loginMaxFailuresPerClient, loginWindow, registerLimit, registerWindow, tokenRate]
{{- end }}

{{/* The services, in port order. */}}
{{- define "linkmesh.serviceNames" -}}
[gateway, auth, link, analytics, moderation, quota]
{{- end }}

{{/*
The variable each key of .Values.config sets. Settings every service reads (log level, drain,
debug address) are listed under "all" in linkmesh.commonSettings.
*/}}
{{- define "linkmesh.settingVariables" -}}
logLevel: LINKMESH_LOG_LEVEL
shutdownDrainSeconds: LINKMESH_SHUTDOWN_DRAIN
debugAddr: LINKMESH_DEBUG_ADDR
baseURL: LINKMESH_BASE_URL
trustedProxies: LINKMESH_TRUSTED_PROXIES
redirectCacheSize: LINKMESH_REDIRECT_CACHE_SIZE
clickQueue: LINKMESH_CLICK_QUEUE
clickSpoolMB: LINKMESH_CLICK_SPOOL_MB
geoipDB: LINKMESH_GEOIP_DB
cookieSecure: LINKMESH_COOKIE_SECURE
captchaSiteKey: LINKMESH_CAPTCHA_SITE_KEY
captchaScriptURL: LINKMESH_CAPTCHA_SCRIPT_URL
sessionTTL: LINKMESH_SESSION_TTL
loginRecordRetention: LINKMESH_LOGIN_RECORD_RETENTION
oidcJWKSURL: LINKMESH_OIDC_JWKS_URL
oidcAuthorizationURL: LINKMESH_OIDC_AUTHORIZATION_URL
mailFrom: LINKMESH_MAIL_FROM
emailVerification: LINKMESH_EMAIL_VERIFICATION
dnsTimeout: LINKMESH_DNS_TIMEOUT
dnsServer: LINKMESH_DNS_SERVER
dnsCacheTTL: LINKMESH_DNS_CACHE_TTL
dnsNegativeTTL: LINKMESH_DNS_NEGATIVE_TTL
clickRetention: LINKMESH_CLICK_RETENTION
clickBudget: LINKMESH_CLICK_BUDGET
clickBudgetWindow: LINKMESH_CLICK_BUDGET_WINDOW
anonQuota: LINKMESH_ANON_QUOTA
anonWindow: LINKMESH_ANON_WINDOW
userWindow: LINKMESH_USER_WINDOW
loginMaxFailures: LINKMESH_LOGIN_MAX_FAILURES
loginMaxFailuresPerEmail: LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL
loginMaxFailuresPerClient: LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT
registerLimit: LINKMESH_REGISTER_LIMIT
registerWindow: LINKMESH_REGISTER_WINDOW
loginWindow: LINKMESH_LOGIN_WINDOW
tokenRate: LINKMESH_TOKEN_RATE
webhookAllowedCIDRs: LINKMESH_WEBHOOK_ALLOWED_CIDRS
webhookRetryBase: LINKMESH_WEBHOOK_RETRY_BASE
{{- end }}

{{- define "linkmesh.commonSettings" -}}
[logLevel, shutdownDrainSeconds, debugAddr]
{{- end }}

{{/*
The secret variables, in the order .Values.secrets lists them: which value holds each, whether a
service cannot start without it, and whether it differs per service (perService: the value is
an object by service name, and the Secret holds one key per service, see linkmesh.secretKey).
*/}}
{{- define "linkmesh.secretVariables" -}}
{{- $own := .Values.secrets.credentialsPerService }}
LINKMESH_INTERNAL_KEY: {value: internalKeys, required: true, perService: true}
LINKMESH_INTERNAL_CERTS: {value: internalCerts, required: true}
LINKMESH_IDENTITY_SECRET: {value: identitySecret, required: true}
LINKMESH_WEBHOOK_KEY: {value: webhookKey, required: true}
LINKMESH_MONGODB_URI: {value: {{ ternary "mongodbURIs" "mongodbURI" $own }}, required: true, perService: {{ $own }}}
LINKMESH_REDIS_URL: {value: {{ ternary "redisURLs" "redisURL" $own }}, required: true, perService: {{ $own }}}
LINKMESH_BOOTSTRAP_ADMIN_EMAIL: {value: bootstrapAdminEmail, required: false}
LINKMESH_BOOTSTRAP_ADMIN_PASSWORD: {value: bootstrapAdminPassword, required: false}
LINKMESH_CAPTCHA_VERIFY_URL: {value: captchaVerifyURL, required: false}
LINKMESH_CAPTCHA_SECRET: {value: captchaSecret, required: false}
LINKMESH_OIDC_ISSUER: {value: oidcIssuer, required: false}
LINKMESH_OIDC_CLIENT_ID: {value: oidcClientID, required: false}
LINKMESH_SMTP_URL: {value: smtpURL, required: false}
{{- end }}

{{/*
The key of the Secret a service reads a secret variable from: the variable's own name, or for a
per-service variable <variable>_<SERVICE> (LINKMESH_INTERNAL_KEY_GATEWAY). The one place this
mapping is made. Takes (dict "root" $ "name" <service> "variable" <variable>).
*/}}
{{- define "linkmesh.secretKey" -}}
{{- $spec := index (include "linkmesh.secretVariables" .root | fromYaml) .variable }}
{{- if $spec.perService }}
{{- printf "%s_%s" .variable (upper .name) }}
{{- else }}
{{- .variable }}
{{- end }}
{{- end }}

{{/*
Every key of the Secret, as YAML: the key, then the variable and value (and for a per-service
variable, the service) it holds. Takes the root context.
*/}}
{{- define "linkmesh.secretKeys" -}}
{{- $root := . }}
{{- range $var, $spec := include "linkmesh.secretVariables" . | fromYaml }}
{{- range $name := ternary (include "linkmesh.serviceNames" $root | fromYamlArray) (list "") (default false $spec.perService) }}
{{ include "linkmesh.secretKey" (dict "root" $root "name" $name "variable" $var) }}: {variable: {{ $var }}, value: {{ $spec.value }}, service: {{ $name | quote }}, required: {{ $spec.required }}}
{{- end }}
{{- end }}
{{- end }}

package chart

import (
	"slices"
	"strings"
	"testing"
)

// The migration Job runs before every install and upgrade, one container per service with a
// database, each `<service> migrate` against its own database with its own URI, from a hook
// Secret of its own (the release's Secret does not exist before the first install) or from the
// existing Secret.
func TestMigrationJob(t *testing.T) {
	for _, c := range []struct {
		name    string
		sets    []string
		secret  string            // the Secret the URIs come from
		keys    map[string]string // service → key in it
		missing bool
	}{
		{"shared credentials", nil, fullname + "-migrate", map[string]string{"auth": "LINKMESH_MONGODB_URI", "quota": "LINKMESH_MONGODB_URI"}, false},
		{"per service", perServiceSets(), fullname + "-migrate", map[string]string{"auth": "LINKMESH_MONGODB_URI_AUTH", "quota": "LINKMESH_MONGODB_URI_QUOTA"}, false},
		{"existing Secret", []string{"secrets.existingSecret=mine"}, "mine", map[string]string{"link": "LINKMESH_MONGODB_URI"}, false},
		{"off", []string{"migrations.enabled=false"}, "", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := render(t, nil, c.sets...)
			job, ok := m.find("Job", fullname+"-migrate")
			if c.missing {
				if ok {
					t.Fatal("a migration Job with migrations.enabled=false")
				}
				return
			}
			if !ok {
				t.Fatal("no migration Job")
			}
			if got := job.Metadata.Annotations["helm.sh/hook"]; got != "pre-install,pre-upgrade" {
				t.Errorf("hook %q", got)
			}
			spec, _ := value(job.raw, "spec.template.spec").(map[string]any)
			var got []string
			for _, ci := range spec["containers"].([]any) {
				ctr := ci.(map[string]any)
				svc := ctr["name"].(string)
				got = append(got, svc)
				if asJSON(ctr["args"]) != `["migrate"]` {
					t.Errorf("%s: args %v", svc, ctr["args"])
				}
				env := map[string]any{}
				for _, e := range ctr["env"].([]any) {
					env[e.(map[string]any)["name"].(string)] = e
				}
				if db, _ := value(env["LINKMESH_MONGODB_DATABASE"].(map[string]any), "value").(string); db != "linkmesh_"+svc {
					t.Errorf("%s: database %q", svc, db)
				}
				ref, _ := value(env["LINKMESH_MONGODB_URI"].(map[string]any), "valueFrom.secretKeyRef").(map[string]any)
				if ref["name"] != c.secret || (c.keys[svc] != "" && ref["key"] != c.keys[svc]) {
					t.Errorf("%s: URI from %v, want %s/%s", svc, ref, c.secret, c.keys[svc])
				}
				// A step may read a setting: analytics' first one sets the kept clicks' expiry
				// from the configured retention.
				if svc == "analytics" && env["LINKMESH_CLICK_RETENTION"] == nil {
					t.Error("analytics migrates without its LINKMESH_CLICK_RETENTION")
				}
				if !strings.Contains(ctr["image"].(string), "/"+svc+":") {
					t.Errorf("%s: image %s", svc, ctr["image"])
				}
			}
			if want := []string{"auth", "link", "analytics", "moderation", "quota"}; !slices.Equal(got, want) {
				t.Errorf("containers %v, want %v", got, want)
			}
			if sec, ok := m.find("Secret", fullname+"-migrate"); ok != (c.secret == fullname+"-migrate") {
				t.Errorf("hook Secret present %v", ok)
			} else if ok {
				data, _ := sec.raw["data"].(map[string]any)
				for svc, key := range c.keys {
					if data[key] == nil {
						t.Errorf("hook Secret has no %s for %s: %v", key, svc, data)
					}
				}
				if sec.Metadata.Annotations["helm.sh/hook-weight"] != "-10" {
					t.Error("the hook Secret is not made before the Job")
				}
			}
		})
	}
}

func perServiceSets() []string {
	sets := []string{"secrets.credentialsPerService=true"}
	for _, svc := range services {
		if svc != "auth" && svc != "moderation" {
			sets = append(sets, "secrets.redisURLs."+svc+"=redis://linkmesh-"+svc+":pw@redis:6379/0")
		}
		if svc != "gateway" {
			sets = append(sets, "secrets.mongodbURIs."+svc+"=mongodb://linkmesh-"+svc+":pw@mongo:27017/?replicaSet=rs0&authSource=linkmesh_"+svc)
		}
	}
	return sets
}

// With credentialsPerService each service reads its own datastore URLs, from keys of its own,
// and no other service's.
func TestCredentialsPerService(t *testing.T) {
	m := render(t, nil, perServiceSets()...)
	var secret struct {
		Data map[string]string `yaml:"data"`
	}
	m.must(t, "Secret", fullname).decode(t, &secret)
	for _, svc := range services {
		env := m.env(t, svc)
		up := strings.ToUpper(svc)
		wantRedis := "secret:LINKMESH_REDIS_URL_" + up
		if svc == "auth" || svc == "moderation" { // no Redis
			wantRedis = ""
		}
		if got := env["LINKMESH_REDIS_URL"]; got != wantRedis {
			t.Errorf("%s: LINKMESH_REDIS_URL from %q, want %q", svc, got, wantRedis)
		}
		want := "secret:LINKMESH_MONGODB_URI_" + up
		if svc == "gateway" {
			want = ""
		}
		if got := env["LINKMESH_MONGODB_URI"]; got != want {
			t.Errorf("%s: LINKMESH_MONGODB_URI from %q, want %q", svc, got, want)
		}
	}
	if _, ok := secret.Data["LINKMESH_MONGODB_URI"]; ok {
		t.Error("a shared MongoDB URI beside the per-service ones")
	}
	_, err := helmTemplate(t, nil, "secrets.credentialsPerService=true")
	if err == nil || !strings.Contains(err.Error(), "secrets.redisURLs.gateway is required") {
		t.Errorf("per-service credentials without the URLs: %v", err)
	}
}

// With NetworkPolicies on, the release's default deny selects the migration pod on an upgrade,
// before any policy of the new release exists: a hook NetworkPolicy, made before the Job and
// gone with it, lets it out to MongoDB and DNS.
func TestMigrationJobNetworkPolicy(t *testing.T) {
	m := render(t, nil, "networkPolicy.enabled=true")
	np, ok := m.find("NetworkPolicy", fullname+"-migrate")
	if !ok {
		t.Fatal("no NetworkPolicy for the migration pod")
	}
	if np.Metadata.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" || np.Metadata.Annotations["helm.sh/hook-weight"] != "-10" {
		t.Errorf("the migration NetworkPolicy is not a hook made before the Job: %v", np.Metadata.Annotations)
	}
	egress, _ := value(np.raw, "spec.egress").([]any)
	if len(egress) != 2 {
		t.Errorf("egress %v, want DNS and MongoDB", egress)
	}
}

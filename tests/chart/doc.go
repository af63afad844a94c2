// Package chart tests the Helm chart charts/linkmesh through what it renders: `helm template`
// of every value set in charts/linkmesh/ci and of values the schema must refuse, checked
// against the services' code (the env.Peer calls that make the call graph) and the README's
// settings table. The helm binary is LINKMESH_HELM (make chart-check and make test set it to
// .tools/bin/helm); without it the tests skip, unless LINKMESH_REQUIRE_INTEGRATION is set.
//
// schemagen, below this folder, makes the offline JSON schemas kubeconform validates the
// rendered manifests with.
package chart

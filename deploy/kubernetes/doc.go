// Package kubernetes holds no code: its tests validate the Kubernetes
// manifests beside them (decoded strictly into the Kubernetes API types)
// and lint the repository's Dockerfile. It is a module of its own so that
// the main module does not depend on k8s.io/api; test.sh runs it:
//
//	(cd deploy/kubernetes && go test -count=1 ./...)
package kubernetes

// Package deploy holds no code: its directory ships what runs
// `snodo-run gateway` (the Dockerfile, the Kubernetes manifests under k8s/,
// the haproxy config under haproxy/, see docs/DEPLOY.md), and its tests
// check those files. The haproxy config's tests, which run a real haproxy,
// are in internal/gateway/lbtest.
package deploy

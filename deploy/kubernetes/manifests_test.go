package kubernetes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcp-gate/mcp-gate/ops"
)

// manifests holds every object of the YAML files under this directory,
// each decoded strictly into its Kubernetes API type.
type manifests struct {
	deployments map[string]*appsv1.Deployment // by file
	configMaps  []*corev1.ConfigMap
	secrets     []*corev1.Secret
	services    []*corev1.Service
	ingresses   []*networkingv1.Ingress
	netpols     []*networkingv1.NetworkPolicy
}

// load decodes every document of every .yaml file. A field the API type
// does not have (a typo, a wrong indentation, a field of another version)
// is an error, as a kind the test does not know is: kubectl would warn or
// drop it silently, and the object would not be what the file says.
func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{deployments: map[string]*appsv1.Deployment{}}
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			strict := func(into any) {
				if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
					t.Errorf("%s document %d (%s %s): %v", f, i, tm.APIVersion, tm.Kind, err)
				}
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				d := &appsv1.Deployment{}
				strict(d)
				m.deployments[f] = d
			case "v1 ConfigMap":
				c := &corev1.ConfigMap{}
				strict(c)
				m.configMaps = append(m.configMaps, c)
			case "v1 Secret":
				s := &corev1.Secret{}
				strict(s)
				m.secrets = append(m.secrets, s)
			case "v1 Service":
				s := &corev1.Service{}
				strict(s)
				m.services = append(m.services, s)
			case "networking.k8s.io/v1 Ingress":
				in := &networkingv1.Ingress{}
				strict(in)
				m.ingresses = append(m.ingresses, in)
			case "networking.k8s.io/v1 NetworkPolicy":
				np := &networkingv1.NetworkPolicy{}
				strict(np)
				m.netpols = append(m.netpols, np)
			default:
				t.Errorf("%s document %d: kind %q of %q is not one this test validates", f, i, tm.Kind, tm.APIVersion)
			}
		}
	}
	return m
}

func stripComments(doc string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The strict decoding is strict: a misspelt field fails it.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	bad := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  selectr:\n    app: x\n"
	if err := yaml.UnmarshalStrict([]byte(bad), &corev1.Service{}); err == nil {
		t.Fatal("a misspelt field decoded without error")
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := load(t)
	if len(m.deployments) != 2 || len(m.configMaps) != 1 || len(m.secrets) != 1 || len(m.services) != 1 || len(m.ingresses) != 1 || len(m.netpols) != 1 {
		t.Fatalf("found %d deployments, %d configmaps, %d secrets, %d services, %d ingresses, %d network policies; want 2 (tokens, oidc), 1, 1, 1, 1, 1",
			len(m.deployments), len(m.configMaps), len(m.secrets), len(m.services), len(m.ingresses), len(m.netpols))
	}
}

// args reads a container's flags: --name value pairs after the command.
func args(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("container %s: args %q do not start with serve", c.Name, c.Args)
	}
	out := map[string]string{}
	for i := 1; i < len(c.Args); i++ {
		a := c.Args[i]
		if !strings.HasPrefix(a, "--") {
			t.Fatalf("container %s: argument %q is not a flag", c.Name, a)
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			out[k] = v
			continue
		}
		if i+1 >= len(c.Args) {
			t.Fatalf("container %s: %s has no value", c.Name, a)
		}
		out[a] = c.Args[i+1]
		i++
	}
	return out
}

// mountOf returns the volume mounted at the directory of path.
func mountOf(t *testing.T, pod *corev1.PodSpec, c *corev1.Container, path string) (*corev1.VolumeMount, *corev1.Volume) {
	t.Helper()
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		if filepath.Dir(path) == vm.MountPath {
			for j := range pod.Volumes {
				if pod.Volumes[j].Name == vm.Name {
					return vm, &pod.Volumes[j]
				}
			}
			t.Fatalf("mount %s names no volume", vm.Name)
		}
	}
	t.Fatalf("%s is under no volume mount of %s", path, c.Name)
	return nil, nil
}

// Issue #12: the Deployment runs the flags the HTTP front end defines on
// the port its probes and Service use, probes the paths package ops
// serves, reads the policy and servers from the ConfigMap (mounted whole,
// so that updates arrive) and identity from the Secret, and runs locked
// down.
func TestDeployment(t *testing.T) {
	m := load(t)
	cm := m.configMaps[0]
	secret := m.secrets[0]
	svc := m.services[0]
	for file, d := range m.deployments {
		t.Run(file, func(t *testing.T) {
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
				t.Errorf("replicas must be 1: sessions live in one pod (see the file's comment)")
			}
			pod := &d.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers", len(pod.Containers))
			}
			c := &pod.Containers[0]
			flags := args(t, c)

			// The image: ours, pinned, not :latest.
			if !regexp.MustCompile(`(^|/)mcp-gate:[A-Za-z0-9._-]+(@sha256:[0-9a-f]{64})?$`).MatchString(c.Image) || strings.HasSuffix(c.Image, ":latest") {
				t.Errorf("image %q: want mcp-gate with a pinned tag", c.Image)
			}

			// The port: --http's, named http, which the probes, the
			// Service and the scrape annotation use.
			_, portText, ok := strings.Cut(flags["--http"], ":")
			port, err := strconv.Atoi(portText)
			if !ok || err != nil || !strings.HasPrefix(flags["--http"], "0.0.0.0:") {
				t.Fatalf("--http %q: want 0.0.0.0:PORT (in a pod the gate must listen beyond loopback)", flags["--http"])
			}
			if len(c.Ports) != 1 || c.Ports[0].Name != "http" || int(c.Ports[0].ContainerPort) != port {
				t.Errorf("container ports %v: want one named http on %d, the --http port", c.Ports, port)
			}
			for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				want := map[string]string{"liveness": ops.HealthzPath, "readiness": ops.ReadyzPath}[name]
				if p == nil || p.HTTPGet == nil {
					t.Errorf("no %s httpGet probe", name)
					continue
				}
				if p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "http" {
					t.Errorf("%s probe %s on %s; want %s on the port named http", name, p.HTTPGet.Path, p.HTTPGet.Port.String(), want)
				}
			}
			ann := d.Spec.Template.Annotations
			if ann["prometheus.io/path"] != ops.MetricsPath || ann["prometheus.io/port"] != strconv.Itoa(port) {
				t.Errorf("scrape annotations %v: want path %s on port %d", ann, ops.MetricsPath, port)
			}
			if svc.Spec.Ports[0].TargetPort.String() != "http" {
				t.Errorf("the Service targets %s, not the port named http", svc.Spec.Ports[0].TargetPort.String())
			}
			for k, v := range svc.Spec.Selector {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("the Service selects %s=%s, which the pods do not carry", k, v)
				}
			}

			// Policy and servers from the ConfigMap, mounted whole.
			for _, f := range []string{"--policy", "--servers"} {
				vm, vol := mountOf(t, pod, c, flags[f])
				if vol.ConfigMap == nil || vol.ConfigMap.Name != cm.Name {
					t.Errorf("%s %s is not on the ConfigMap %s", f, flags[f], cm.Name)
				}
				if vm.SubPath != "" {
					t.Errorf("%s: a subPath mount is never updated, so the hot reload would not see ConfigMap changes", f)
				}
				if _, ok := cm.Data[filepath.Base(flags[f])]; !ok {
					t.Errorf("%s %s: the ConfigMap has no key %s", f, flags[f], filepath.Base(flags[f]))
				}
			}
			// Identity from the Secret: the token file, or the issuer.
			switch {
			case flags["--auth-tokens"] != "":
				vm, vol := mountOf(t, pod, c, flags["--auth-tokens"])
				if vol.Secret == nil || vol.Secret.SecretName != secret.Name || vm.SubPath != "" {
					t.Errorf("--auth-tokens is not on the Secret %s mounted whole", secret.Name)
				}
				if _, ok := secret.StringData[filepath.Base(flags["--auth-tokens"])]; !ok {
					t.Errorf("the Secret has no key %s", filepath.Base(flags["--auth-tokens"]))
				}
			case flags["--oidc-issuer"] != "" && flags["--oidc-audience"] != "":
				for _, f := range []string{"--oidc-issuer", "--oidc-audience"} {
					name := strings.TrimSuffix(strings.TrimPrefix(flags[f], "$("), ")")
					i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
					if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil || c.Env[i].ValueFrom.SecretKeyRef.Name != secret.Name {
						t.Errorf("%s %s: not an environment variable from the Secret %s", f, flags[f], secret.Name)
						continue
					}
					if _, ok := secret.StringData[c.Env[i].ValueFrom.SecretKeyRef.Key]; !ok {
						t.Errorf("%s: the Secret has no key %s", f, c.Env[i].ValueFrom.SecretKeyRef.Key)
					}
				}
			default:
				t.Error("no identity: --auth-tokens or --oidc-issuer with --oidc-audience (the HTTP front end refuses a non-loopback address without one)")
			}

			// Locked down.
			psc, sc := pod.SecurityContext, c.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
				t.Error("the pod does not run as a non-root user")
			}
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, capabilities drop ALL", sc)
			}
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
				t.Error("the pod mounts a service account token it does not need")
			}
			if _, vol := mountOf(t, pod, c, "/tmp/x"); vol.EmptyDir == nil {
				t.Error("/tmp is not a writable emptyDir (the root filesystem is read-only)")
			}
			lim := c.Resources.Limits
			if lim.Memory().IsZero() || lim.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("resources %+v: want memory and cpu limits and a memory request", c.Resources)
			}
			if docker := dockerUser(t); docker != strconv.FormatInt(*psc.RunAsUser, 10) {
				t.Errorf("runAsUser %d is not the image's USER %s", *psc.RunAsUser, docker)
			}
		})
	}
}

// The Ingress routes the MCP endpoint and its metadata to the Service,
// and nothing else: /metrics and the probes carry no authentication.
func TestIngress(t *testing.T) {
	m := load(t)
	in, svc := m.ingresses[0], m.services[0]
	var paths []string
	for _, r := range in.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			paths = append(paths, p.Path)
			if p.Backend.Service == nil || p.Backend.Service.Name != svc.Name || p.Backend.Service.Port.Name != svc.Spec.Ports[0].Name {
				t.Errorf("path %s does not reach the Service %s port %s", p.Path, svc.Name, svc.Spec.Ports[0].Name)
			}
			if p.Path == "/" || strings.HasPrefix(ops.MetricsPath, p.Path) && p.PathType != nil && *p.PathType == networkingv1.PathTypePrefix {
				t.Errorf("path %s (%s) exposes the operations endpoints", p.Path, *p.PathType)
			}
		}
	}
	if !slices.Contains(paths, "/mcp") {
		t.Errorf("paths %v: the MCP endpoint /mcp is not routed", paths)
	}
	if in.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"] != "off" {
		t.Error("SSE streams need proxy buffering off")
	}
	if len(in.Spec.TLS) == 0 {
		t.Error("no TLS at the Ingress: bearer tokens would cross the network in clear")
	}
}

// Issue #12: once the HTTP front end is in the binary, every flag the
// Deployments pass is one serve knows. Until then (the front end is built
// on another branch) the test says so and checks the flags serve has.
func TestDeploymentFlagsAreServeFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mcp-gate")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/mcp-gate")
	build.Dir = "../.." // in the main module, with its go.sum
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var help bytes.Buffer
	cmd := exec.Command(bin, "serve", "--help")
	cmd.Stdout, cmd.Stderr = &help, &help
	_ = cmd.Run()
	known := func(f string) bool {
		return strings.Contains(help.String(), f+" ") || strings.Contains(help.String(), f+"=")
	}
	for file, d := range load(t).deployments {
		for f := range args(t, &d.Spec.Template.Spec.Containers[0]) {
			switch {
			case known(f):
			default:
				t.Errorf("%s: serve has no flag %s", file, f)
			}
		}
	}
}

// The NetworkPolicy selects the gate's pods and admits its port named
// http, and only from the namespaces it names: the operations endpoints
// have no authentication.
func TestNetworkPolicy(t *testing.T) {
	m := load(t)
	np := m.netpols[0]
	for file, d := range m.deployments {
		for k, v := range np.Spec.PodSelector.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("%s: the NetworkPolicy selects %s=%s, which the pods do not carry", file, k, v)
			}
		}
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Error("the NetworkPolicy does not govern ingress")
	}
	for _, r := range np.Spec.Ingress {
		if len(r.From) == 0 {
			t.Error("an ingress rule admits every source")
		}
		for _, p := range r.Ports {
			if p.Port == nil || p.Port.String() != "http" {
				t.Errorf("an ingress rule admits port %v, not the port named http", p.Port)
			}
		}
	}
}

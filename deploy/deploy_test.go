package deploy

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/snodo/snodo/internal/gateway"
)

// What the gateway serves: the endpoints the probes and the load balancer
// use, and the port the image listens on.
const (
	healthPath  = "/healthz"
	readyPath   = "/readyz"
	gatewayPort = 8080
	configPath  = "/etc/snodo/gateway.yaml"
	// stateKeyEnv is the variable the example config's stateKey names
	// ("env:SNODO_STATE_KEY") and the Deployment sets from the Secret.
	stateKeyEnv = "SNODO_STATE_KEY"
)

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct {
	cmd, args string
}

func readDockerfile(t *testing.T) (stages [][]instruction) {
	t.Helper()
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		cur += line
		cmd, args, _ := strings.Cut(cur, " ")
		cur = ""
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before the first FROM", in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

func find(stage []instruction, cmd string) []string {
	var out []string
	for _, in := range stage {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func entrypoint(t *testing.T, final []instruction) []string {
	t.Helper()
	eps := find(final, "ENTRYPOINT")
	if len(eps) != 1 {
		t.Fatalf("final stage has %d ENTRYPOINTs; want 1", len(eps))
	}
	var ep []string
	if err := json.Unmarshal([]byte(eps[0]), &ep); err != nil {
		t.Fatalf("ENTRYPOINT %s: want the exec (JSON array) form: %v", eps[0], err)
	}
	return ep
}

// The final image: distroless static (nonroot) or scratch, a numeric
// non-root USER, the gateway on 0.0.0.0:8080 with its config at
// /etc/snodo/gateway.yaml, and the user cache directory (the Wasm
// compilation cache) set by env so that it can be a writable mount.
func TestDockerfileFinalImage(t *testing.T) {
	stages := readDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages; want a build stage and a final one", len(stages))
	}
	final := stages[len(stages)-1]
	from := final[0].args
	if !regexp.MustCompile(`^(gcr\.io/distroless/static(-debian\d+)?:nonroot|scratch)$`).MatchString(from) {
		t.Errorf("final stage FROM %s; want gcr.io/distroless/static…:nonroot or scratch", from)
	}
	users := find(final, "USER")
	if len(users) == 0 {
		t.Fatal("final stage has no USER")
	}
	for i, id := range strings.Split(users[len(users)-1], ":") {
		n, err := strconv.Atoi(id)
		if err != nil || n == 0 {
			t.Errorf("USER %s: field %d is %q; want a numeric non-root ID (Kubernetes' runAsNonRoot needs a number)", users[len(users)-1], i, id)
		}
	}
	if got := find(final, "EXPOSE"); !slices.Equal(got, []string{strconv.Itoa(gatewayPort)}) {
		t.Errorf("EXPOSE %v; want [%d]", got, gatewayPort)
	}
	ep := entrypoint(t, final)
	want := []string{"gateway", "--config", configPath, "--listen", "0.0.0.0:" + strconv.Itoa(gatewayPort)}
	if len(ep) != len(want)+1 || filepath.Base(ep[0]) != "snodo-run" || !slices.Equal(ep[1:], want) {
		t.Errorf("ENTRYPOINT %q; want snodo-run %q", ep, want)
	}
	if !slices.ContainsFunc(find(final, "COPY"), func(s string) bool {
		return strings.HasPrefix(s, "--from=") && strings.HasSuffix(s, " "+ep[0])
	}) {
		t.Errorf("final stage does not COPY --from the build stage to %s", ep[0])
	}
	if env := envOf(t, final); !strings.HasPrefix(env["XDG_CACHE_HOME"], "/") {
		t.Errorf("final stage ENV XDG_CACHE_HOME=%q; want an absolute directory (a writable mount under a read-only root)", env["XDG_CACHE_HOME"])
	}
}

func envOf(t *testing.T, stage []instruction) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range find(stage, "ENV") {
		for _, kv := range strings.Fields(e) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.ContainsAny(v, `"'$`) {
				t.Fatalf("ENV %s: write it as KEY=value pairs without quotes or variables (the tests read it)", e)
			}
			env[k] = v
		}
	}
	return env
}

// The build stage's go build, with the stage's ENV, run here as the
// Dockerfile runs it (cgo on, as in the golang image, unless the ENV turns
// it off), gives a static binary: no program interpreter, no shared
// library, CGO_ENABLED=0 in its build settings.
func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	stages := readDockerfile(t)
	build := stages[0]
	var args []string
	for _, run := range find(build, "RUN") {
		if _, rest, ok := strings.Cut(run, "go build "); ok {
			if strings.ContainsAny(rest, `"'$&|;`) {
				t.Fatalf("RUN %s: keep the go build plain (no quotes, variables or shell operators) so that the tests can run it", run)
			}
			args = strings.Fields(rest)
		}
	}
	if args == nil {
		t.Fatal("build stage has no RUN go build")
	}
	out := filepath.Join(t.TempDir(), "snodo-run")
	if i := slices.Index(args, "-o"); i < 0 || i+1 >= len(args) {
		t.Fatalf("go build %q: no -o", args)
	} else {
		args[i+1] = out
	}
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = ".." // the Dockerfile's build context is the repository
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS=")
	for k, v := range envOf(t, build) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %q: %v\n%s", args, err, b)
	}

	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: dynamically linked", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil && !errors.Is(err, elf.ErrNoSymbols) || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	b, err := exec.Command("go", "version", "-m", out).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*build\s+CGO_ENABLED=0$`).Match(b) {
		t.Errorf("go version -m: no CGO_ENABLED=0 in the build settings:\n%s", b)
	}
}

type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Replicas  *int          `yaml:"replicas"`
		ClusterIP string        `yaml:"clusterIP"`
		Selector  yaml.Node     `yaml:"selector"`
		Ports     []servicePort `yaml:"ports"`
		Template  struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type servicePort struct {
	Port       int       `yaml:"port"`
	TargetPort yaml.Node `yaml:"targetPort"`
}

type podSpec struct {
	AutomountServiceAccountToken *bool           `yaml:"automountServiceAccountToken"`
	SecurityContext              securityContext `yaml:"securityContext"`
	Containers                   []container     `yaml:"containers"`
	Volumes                      []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		EmptyDir *struct{} `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
		Add  []string `yaml:"add"`
	} `yaml:"capabilities"`
}

type probe struct {
	HTTPGet *struct {
		Path string    `yaml:"path"`
		Port yaml.Node `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	SecurityContext securityContext `yaml:"securityContext"`
	Resources       struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	LivenessProbe  probe `yaml:"livenessProbe"`
	ReadinessProbe probe `yaml:"readinessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

func readK8s(t *testing.T) map[string][]k8sObject {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("k8s/*.yaml: %v %v", files, err)
	}
	byKind := map[string][]k8sObject{}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			byKind[o.Kind] = append(byKind[o.Kind], o)
		}
	}
	return byKind
}

func one(t *testing.T, objs map[string][]k8sObject, kind string) k8sObject {
	t.Helper()
	if len(objs[kind]) != 1 {
		t.Fatalf("k8s: %d %s objects; want 1", len(objs[kind]), kind)
	}
	return objs[kind][0]
}

// The Deployment runs 2 replicas of the image as it is (its entrypoint, no
// command of its own) as a non-root user with a read-only root filesystem,
// no capability and no privilege escalation, bounded resources, probes on
// the gateway's /healthz and /readyz at its port, the config from the
// ConfigMap where the entrypoint reads it, the stateKey from the Secret,
// and writable mounts for the cache directory and /tmp; the Service sends
// to that port.
func TestK8sManifests(t *testing.T) {
	objs := readK8s(t)
	dep := one(t, objs, "Deployment")
	if r := dep.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("Deployment replicas %v; want 2 or more", r)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment: %d containers; want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Command != nil || c.Args != nil {
		t.Errorf("container command %q args %q; want the image's entrypoint", c.Command, c.Args)
	}
	psc, csc := pod.SecurityContext, c.SecurityContext
	users := find(readDockerfile(t)[1], "USER")
	imageUser, _, _ := strings.Cut(users[len(users)-1], ":")
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || strconv.FormatInt(*psc.RunAsUser, 10) != imageUser {
		t.Errorf("pod securityContext %+v; want runAsNonRoot and runAsUser %s, the image's USER", psc, imageUser)
	}
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		t.Error("container securityContext: want readOnlyRootFilesystem: true")
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Error("container securityContext: want allowPrivilegeEscalation: false")
	}
	if !slices.Equal(csc.Capabilities.Drop, []string{"ALL"}) || len(csc.Capabilities.Add) > 0 {
		t.Errorf("container capabilities drop %q add %q; want drop [ALL], add none", csc.Capabilities.Drop, csc.Capabilities.Add)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("pod: want automountServiceAccountToken: false (the gateway needs no Kubernetes API)")
	}
	for _, m := range []map[string]string{c.Resources.Requests, c.Resources.Limits} {
		if m["cpu"] == "" || m["memory"] == "" {
			t.Errorf("container resources %+v; want cpu and memory requests and limits", c.Resources)
		}
	}

	portName := ""
	for _, p := range c.Ports {
		if p.ContainerPort == gatewayPort {
			portName = p.Name
		}
	}
	if portName == "" {
		t.Fatalf("container ports %+v; want a named port %d", c.Ports, gatewayPort)
	}
	isGatewayPort := func(n yaml.Node) bool { return n.Value == portName || n.Value == strconv.Itoa(gatewayPort) }
	for _, p := range []struct {
		name, path string
		probe      probe
	}{{"liveness", healthPath, c.LivenessProbe}, {"readiness", readyPath, c.ReadinessProbe}} {
		if p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || !isGatewayPort(p.probe.HTTPGet.Port) {
			got := "none"
			if g := p.probe.HTTPGet; g != nil {
				got = "httpGet " + g.Path + " on port " + g.Port.Value
			}
			t.Errorf("%s probe: %s; want httpGet %s on port %s (%d)", p.name, got, p.path, portName, gatewayPort)
		}
	}
	for _, svc := range objs["Service"] {
		for _, sp := range svc.Spec.Ports {
			if !isGatewayPort(sp.TargetPort) {
				t.Errorf("Service %s targetPort %q; want %s", svc.Metadata.Name, sp.TargetPort.Value, portName)
			}
		}
		var sel map[string]string
		if err := svc.Spec.Selector.Decode(&sel); err != nil || len(sel) == 0 {
			t.Errorf("Service %s selector: %v", svc.Metadata.Name, err)
		}
		for k, v := range sel {
			if dep.Spec.Template.Metadata.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s; the pods do not have it", svc.Metadata.Name, k, v)
			}
		}
	}
	if len(objs["Service"]) == 0 {
		t.Error("k8s: no Service")
	}

	volumes := map[string]int{}
	cm := one(t, objs, "ConfigMap")
	for i, v := range pod.Volumes {
		volumes[v.Name] = i
	}
	mounted := func(path string) (configMap string, emptyDir, readOnly bool) {
		for _, m := range c.VolumeMounts {
			if m.MountPath == path {
				i, ok := volumes[m.Name]
				if !ok {
					t.Fatalf("volumeMount %s: no volume %s", path, m.Name)
				}
				if v := pod.Volumes[i]; v.ConfigMap != nil {
					return v.ConfigMap.Name, false, m.ReadOnly
				} else {
					return "", v.EmptyDir != nil, m.ReadOnly
				}
			}
		}
		return "", false, false
	}
	if name, _, ro := mounted(filepath.Dir(configPath)); name != cm.Metadata.Name || !ro {
		t.Errorf("%s: mounted from ConfigMap %q (read-only %v); want %s, read-only", filepath.Dir(configPath), name, ro, cm.Metadata.Name)
	}
	if _, ok := cm.Data[filepath.Base(configPath)]; !ok {
		t.Errorf("ConfigMap %s has no %s (the entrypoint's --config %s)", cm.Metadata.Name, filepath.Base(configPath), configPath)
	}
	cache := envOf(t, readDockerfile(t)[1])["XDG_CACHE_HOME"]
	for _, dir := range []string{cache, "/tmp"} {
		if _, empty, ro := mounted(dir); !empty || ro {
			t.Errorf("%s: want a writable emptyDir mount (the root filesystem is read-only)", dir)
		}
	}

	sec := one(t, objs, "Secret")
	found := false
	for _, e := range c.Env {
		if e.Name == stateKeyEnv && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			_, ok := sec.StringData[ref.Key]
			if _, ok2 := sec.Data[ref.Key]; ref.Name != sec.Metadata.Name || !(ok || ok2) {
				t.Errorf(stateKeyEnv+" from Secret %s key %s; the Secret is %s with keys %v", ref.Name, ref.Key, sec.Metadata.Name, sec.StringData)
			}
			found = true
		}
	}
	if !found {
		t.Errorf("container env: no %s from a Secret", stateKeyEnv)
	}
}

// The ConfigMap's gateway.yaml is a config the gateway reads: known
// sections only, two servers named as the merged name space requires.
func TestK8sConfigMapIsAGatewayConfig(t *testing.T) {
	cm := one(t, readK8s(t), "ConfigMap")
	s, err := gateway.ParseConfig([]byte(cm.Data[filepath.Base(configPath)]), ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	var servers map[string]map[string]any
	if err := s.Decode("mcpServers", &servers); err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 {
		t.Errorf("mcpServers: %d servers; want the example's 2", len(servers))
	}
	for name := range servers {
		if !regexp.MustCompile(gateway.ServerNamePattern).MatchString(name) {
			t.Errorf("server name %q does not match %s", name, gateway.ServerNamePattern)
		}
	}
	var key string
	if err := s.Decode("stateKey", &key); err != nil || key != "env:"+stateKeyEnv {
		t.Errorf("stateKey %q (%v); want \"env:%s\", the variable the Deployment sets from the Secret", key, err, stateKeyEnv)
	}
	var origins []string
	if err := s.Decode("allowedOrigins", &origins); err != nil || len(origins) == 0 {
		t.Errorf("allowedOrigins %q (%v); want the origins allowed, the container listening on 0.0.0.0", origins, err)
	}
}

// The build stage's Go is the one go.mod asks for (major.minor).
func TestDockerfileGoMatchesGoMod(t *testing.T) {
	from := readDockerfile(t)[0][0].args
	m := regexp.MustCompile(`^golang:(\d+\.\d+)[.-]`).FindStringSubmatch(from)
	if m == nil {
		t.Fatalf("build stage FROM %s; want golang:MAJOR.MINOR-…", from)
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	g := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if g == nil {
		t.Fatal("go.mod has no go line")
	}
	if string(g[1]) != m[1] {
		t.Errorf("build stage FROM %s; go.mod says go %s", from, g[1])
	}
}

// deploy/kubernetes checked offline, with no cluster:
//  1. each object against Kubernetes' OpenAPI schema (npm's kubernetes-models: types, required
//     fields, formats, enums);
//  2. no field that the API does not have (that schema lets unknown fields through, where the
//     API server's strict validation refuses them): each object is walked along the type map of
//     the official client, @kubernetes/client-node;
//  3. what ties the manifests to cspd: every flag is one `cspd --help` lists, probe paths and
//     ports, the drain fits in the grace period, selectors, mounts and the kustomization;
//  4. what ties cspd to its Redis (--cluster): the URL names a Service and its port, that Service
//     selects the Redis pods, and that Redis persists nothing, is probed and is never two at once.
// Usage: node manifests.mjs CSPD_BINARY MANIFEST_DIR
import * as client from "@kubernetes/client-node";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

const [cspd, dir] = process.argv.slice(2);
const problems = [];
const problem = (text) => problems.push(text);

const models = {
  "apps/v1 Deployment": ["kubernetes-models/apps/v1/Deployment", "Deployment", "V1Deployment"],
  "v1 Service": ["kubernetes-models/v1/Service", "Service", "V1Service"],
  "policy/v1 PodDisruptionBudget": ["kubernetes-models/policy/v1/PodDisruptionBudget", "PodDisruptionBudget",
                                    "V1PodDisruptionBudget"],
};

// --- 2. unknown fields, along the client's type map ------------------------------------------
function clientType(name) {
  return client[name] && typeof client[name].getAttributeTypeMap === "function" ? client[name] : null;
}

function walk(value, type, path) {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) return problem(`${path}: expected a list`);
    value.forEach((item, i) => walk(item, array[1], `${path}[${i}]`));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    for (const [key, item] of Object.entries(value)) walk(item, map[1], `${path}.${key}`);
    return;
  }
  const model = clientType(type);
  if (!model) return;  // a scalar, IntOrString, a quantity: the schema's business (check 1)
  if (typeof value !== "object" || Array.isArray(value)) return problem(`${path}: expected an object (${type})`);
  const fields = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [key, item] of Object.entries(value)) {
    if (!fields.has(key)) problem(`${path}.${key}: no such field in ${type}`);
    else walk(item, fields.get(key), `${path}.${key}`);
  }
}

// --- 1 and 2 for each object ---------------------------------------------------------------------
const objects = [];
const files = readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();
for (const file of files) {
  for (const doc of parseAllDocuments(readFileSync(join(dir, file), "utf8"))) {
    if (doc.errors.length) {
      problem(`${file}: YAML: ${doc.errors.map((e) => e.message).join("; ")}`);
      continue;
    }
    const object = doc.toJS();
    if (!object) continue;
    objects.push({ file, object });
    if (object.kind === "Kustomization") continue;
    const key = `${object.apiVersion} ${object.kind}`;
    if (!models[key]) {
      problem(`${file}: no schema here for ${key}`);
      continue;
    }
    const [module, className, clientName] = models[key];
    const Model = (await import(module))[className];
    try {
      new Model(object).validate();
    } catch (e) {
      problem(`${file}: ${key} does not match Kubernetes' schema: ${e.message}`);
    }
    walk(object, clientName, `${file}:${object.kind}`);
  }
}

// --- 3. what ties them to cspd -------------------------------------------------------------------
// cspd's objects are the ones named cspd: other files (redis.yaml) hold Deployments and Services too.
const find = (kind) => objects.filter((o) => o.object.kind === kind).map((o) => o.object);
const named = (kind, name) => find(kind).find((o) => o.metadata?.name === name);
const deployment = named("Deployment", "cspd");
const service = named("Service", "cspd");
const budget = named("PodDisruptionBudget", "cspd");
const [kustomization] = find("Kustomization");
if (!deployment || !service || !budget || !kustomization)
  problem("expected a Deployment, a Service and a PodDisruptionBudget named cspd, and a Kustomization");

const help = execFileSync(cspd, ["--help"], { encoding: "utf8" });
const equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);
// A Service's selector picks the pods that carry each of its labels (and an empty one, none).
const selects = (selector, labels) =>
  Object.keys(selector || {}).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

if (deployment) {
  const pod = deployment.spec.template.spec;
  const labels = deployment.spec.template.metadata.labels;
  if (!equal(deployment.spec.selector.matchLabels, labels)) problem("the Deployment's selector is not its pods' labels");
  const container = pod.containers.find((c) => c.name === "cspd");
  const args = container.args || [];
  const flags = new Map();  // a flag's first value
  const every = new Map();  // all of a flag's values (--bind and --status-listen repeat)
  for (const arg of args) {
    const m = /^(--[a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) {
      problem(`argument ${arg}: write flags as --name=value`);
      continue;
    }
    if (!new RegExp(`(^|[ ,])${m[1]}[ =]`, "m").test(help)) problem(`flag ${m[1]} is not in cspd --help`);
    if (!flags.has(m[1])) flags.set(m[1], m[2]);
    every.set(m[1], [...(every.get(m[1]) || []), m[2]]);
  }
  // Both families: a cluster with IPv6 pod addresses reaches the pod too.
  const binds = every.get("--bind") || [];
  if (!binds.includes("0.0.0.0") || !binds.includes("[::]"))
    problem(`--bind is not 0.0.0.0 and [::] (both families): ${binds.join(", ") || "none"}`);
  const port = (name) => (container.ports || []).find((p) => p.name === name);
  if (!port("http") || String(port("http").containerPort) !== flags.get("--port"))
    problem(`container port "http" is not --port (${flags.get("--port")})`);
  const statusListens = every.get("--status-listen") || [];
  for (const statusListen of statusListens)
    if (!port("metrics") || !statusListen.endsWith(`:${port("metrics").containerPort}`))
      problem(`container port "metrics" is not --status-listen's (${statusListen})`);
  if (!statusListens.some((s) => s.startsWith("0.0.0.0:")) || !statusListens.some((s) => s.startsWith("[::]:")))
    problem(`--status-listen is not on both families: ${statusListens.join(", ") || "none"}`);
  const probe = (name, path) => {
    const p = container[name];
    if (!p || !p.httpGet) return problem(`no ${name}`);
    if (p.httpGet.path !== path) problem(`${name} asks ${p.httpGet.path}, not ${path}`);
    // The status address keeps a connection budget of its own: a flood of the public port
    // must not fail the probes (and get the pod restarted).
    if (p.httpGet.port !== "metrics") problem(`${name} is not on the status (metrics) port`);
  };
  probe("readinessProbe", "/-/ready");
  probe("livenessProbe", "/-/healthy");
  probe("startupProbe", "/-/healthy");
  const sleep = Number((container.lifecycle?.preStop?.exec?.command || [])[1] || 0);
  const drain = Number(flags.get("--drain-timeout") || 10);
  if (!(pod.terminationGracePeriodSeconds > sleep + drain + 2))
    problem(`terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} does not cover preStop ${sleep} s` +
            ` + --drain-timeout ${drain} s + the master's 2 s`);
  const mount = (path) => (container.volumeMounts || []).find((m) => m.mountPath === path);
  const handlers = mount(flags.get("--handlers"));
  if (!handlers) problem(`nothing is mounted at --handlers ${flags.get("--handlers")}`);
  else if (!pod.volumes.some((v) => v.name === handlers.name)) problem(`no volume ${handlers.name}`);
  if (container.securityContext?.readOnlyRootFilesystem && !mount("/tmp"))
    problem("a read-only root needs /tmp mounted (handler copies, spilled uploads)");
  const cpu = container.resources?.limits?.cpu;
  if (String(cpu) !== flags.get("--workers")) problem(`--workers ${flags.get("--workers")} is not the CPU limit ${cpu}`);

  if (service) {
    if (!equal(service.spec.selector, labels)) problem("the Service's selector is not the pods' labels");
    for (const p of service.spec.ports)
      if (!port(p.targetPort)) problem(`Service port ${p.name} targets ${p.targetPort}, which the pod does not name`);
  }
  if (budget && !equal(budget.spec.selector.matchLabels, labels))
    problem("the PodDisruptionBudget's selector is not the pods' labels");

  // --- 4. cspd's Redis ---------------------------------------------------------------------------
  const cluster = flags.get("--cluster");
  const url = cluster && /^redis:\/\/([a-z0-9.-]+):(\d+)$/.exec(cluster);
  if (!cluster) problem("no --cluster: topics would not cross pods");
  else if (!url) problem(`--cluster ${cluster} is not redis://SERVICE:PORT`);
  else {
    // The host is a Service here (its short name, or NAME.NAMESPACE... in DNS form).
    const [, host, redisPort] = url;
    const redisService = named("Service", host.split(".")[0]);
    if (!redisService) problem(`--cluster names ${host}, which is no Service here`);
    else {
      const servicePort = redisService.spec.ports.find((p) => String(p.port) === redisPort);
      if (!servicePort) problem(`Service ${redisService.metadata.name} has no port ${redisPort} (--cluster's)`);
      const selector = redisService.spec.selector;
      const redis = find("Deployment").find((d) => selects(selector, d.spec.template.metadata.labels));
      const server = redis?.spec.template.spec.containers.find((c) => c.name === "redis");
      if (!redis) problem(`Service ${redisService.metadata.name}'s selector matches no Deployment's pods`);
      else if (redis === deployment) problem(`--cluster names ${host}, whose Service selects cspd's own pods`);
      else if (!server) problem(`${redis.metadata.name}: no container named redis`);
      else {
        if (!equal(redis.spec.selector.matchLabels, redis.spec.template.metadata.labels))
          problem(`${redis.metadata.name}: the Deployment's selector is not its pods' labels`);
        const target = servicePort?.targetPort;
        if (servicePort && !(server.ports || []).some((p) => p.name === target || p.containerPort === target))
          problem(`Service ${redisService.metadata.name} port ${redisPort} targets ${target}: Redis has no such port`);
        // Redis takes "--name value" pairs: a name's value is the argument after it.
        const redisArgs = server.args || [];
        const value = (name) => (redisArgs.includes(name) ? redisArgs[redisArgs.indexOf(name) + 1] : undefined);
        if (value("--save") !== "") problem(`${redis.metadata.name}: not --save "" (it would write snapshots)`);
        if (value("--appendonly") !== "no") problem(`${redis.metadata.name}: not --appendonly no (it would log writes)`);
        // An evicting policy can take a topic's meta key and keep its stream: a wrong history, unsaid.
        if (value("--maxmemory-policy") !== "noeviction")
          problem(`${redis.metadata.name}: not --maxmemory-policy noeviction`);
        if (!server.readinessProbe) problem(`${redis.metadata.name}: no readinessProbe`);
        // A rolling update would keep two Redis behind the Service for a while, each with some cspd.
        if (redis.spec.replicas !== 1 || redis.spec.strategy?.type !== "Recreate")
          problem(`${redis.metadata.name}: not one replica with strategy Recreate (never two Redis at once)`);
      }
    }
  }
}
if (kustomization) {
  const listed = [...kustomization.resources].sort();
  const others = files.filter((f) => f !== "kustomization.yaml");
  if (!equal(listed, others)) problem(`kustomization lists ${listed}, the folder has ${others}`);
}

for (const p of problems) console.log(`FAILED: ${p}`);
console.log(problems.length ? `${problems.length} problem(s)` : `${objects.length} manifests pass`);
process.exit(problems.length ? 1 : 0);

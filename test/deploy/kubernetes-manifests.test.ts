// deploy/kubernetes checked offline, as kubeconform would online: every object parsed and validated
// against the Kubernetes and KEDA schemas (`kubernetes-models`, `@kubernetes-models/keda`), then
// the cross-references a schema cannot see: selectors, ports, probes, the configuration the
// services read, the KEDA query's metric, shutdown deadlines, the PostgreSQL connection budget,
// the example GPU model server of deploy/kubernetes/models with the workers it serves, and the
// PrometheusRule of deploy/kubernetes/monitoring, generated from deploy/prometheus/taskapi-rules.yml.
import fs from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { CONFIG_VARIABLES, loadConfig } from '@taskapi/config';
import { isTaskKind, TASK_KIND_CATALOG, TASK_KINDS } from '@taskapi/task-kinds';
import { createMetrics } from '../../services/api/src/infra/metrics';
import { generatePrometheusRule, PROMETHEUS_RULE_FILE, RULES_FILE } from '../../scripts/generate-prometheus-rule';

const ROOT = path.resolve(__dirname, '../..');
const DIR = path.join(ROOT, 'deploy/kubernetes');
const IMAGE = 'registry.example.com/taskapi';

/** Variables the manifests leave out on purpose. */
const OMITTED: Record<string, string> = {
  DEV_SECRETS_FILE: 'development only: production never generates secrets',
  BENCH_FIFO_SCHEDULING: 'npm run bench only: refused in production',
};
/** Variables the manifests set that the configuration does not read, and who reads them. */
const READ_ELSEWHERE: Record<string, string> = {
  MIGRATE_DATABASE_URL: 'a Secret key: the migration Job passes it as its DATABASE_URL',
  AWS_ACCESS_KEY_ID: 'the AWS SDK (STORAGE_DRIVER=s3)',
  AWS_SECRET_ACCESS_KEY: 'the AWS SDK (STORAGE_DRIVER=s3)',
};
/** Variables that must come from the Secret, never the ConfigMap. */
const SECRET_VARIABLES = ['DATABASE_URL', 'REDIS_URL', 'REDIS_SENTINEL_PASSWORD', 'JWT_SECRET', 'SECRETS_KEY', 'ADMIN_PASSWORD'];
/** The component label of model servers (deploy/kubernetes/models): not Task API processes. */
const MODEL = 'model';

const VALIDATORS: Record<string, new (data: any) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

interface Manifest {
  file: string;
  obj: any;
}

function yamlFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(full);
    return /\.ya?ml$/.test(e.name) ? [full] : [];
  });
}

const files = yamlFiles(DIR);
const documents: Manifest[] = files.flatMap((file) =>
  parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      return doc.toJS() as unknown;
    })
    .filter((obj) => obj !== null && obj !== undefined)
    .map((obj) => ({ file: path.relative(DIR, file), obj })),
);
const kustomizations = documents.filter((d) => d.obj.kind === 'Kustomization');
const objects = documents.filter((d) => d.obj.kind !== 'Kustomization');
const ofKind = (kind: string) => objects.filter((d) => d.obj.kind === kind).map((d) => d.obj);
const byName = (kind: string, name: string) => ofKind(kind).find((o) => o.metadata.name === name);

const configMap = byName('ConfigMap', 'taskapi-config');
const secret = byName('Secret', 'taskapi-secrets');
const componentOf = (d: any) => d.spec.template.metadata.labels['app.kubernetes.io/component'] as string;
/** The Task API's own Deployments (the image, its probes and budgets); model servers are apart. */
const deployments = ofKind('Deployment').filter((d) => componentOf(d) !== MODEL);
const modelDeployments = ofKind('Deployment').filter((d) => componentOf(d) === MODEL);
const podSpecs: Array<{ name: string; spec: IPodSpec; labels: Record<string, string> }> = [
  ...deployments.map((d) => ({ name: d.metadata.name as string, spec: d.spec.template.spec, labels: d.spec.template.metadata.labels })),
  ...ofKind('Job').map((j) => ({ name: j.metadata.name as string, spec: j.spec.template.spec, labels: j.spec.template.metadata.labels })),
];
const deploymentsOf = (component: string) => deployments.filter((d) => componentOf(d) === component);
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The environment a container starts with: ConfigMap, Secret (example), then its own `env`. */
function environmentOf(container: IContainer): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, byName('ConfigMap', from.configMapRef.name!).data);
    if (from.secretRef) Object.assign(env, byName('Secret', from.secretRef.name!).stringData);
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) env[e.name] = secret.stringData[e.valueFrom.secretKeyRef.key];
  }
  return env;
}

/** Placeholder secrets replaced by well-formed ones, so the configuration can be loaded as a pod would. */
const wellFormedSecrets = { JWT_SECRET: 'k'.repeat(48), SECRETS_KEY: Buffer.alloc(32, 1).toString('base64') };

describe('deploy/kubernetes', () => {
  it('parses, and every object passes its Kubernetes or KEDA schema', () => {
    expect(objects.length).toBeGreaterThan(10);
    for (const { file, obj } of objects) {
      const Model = VALIDATORS[`${obj.apiVersion}/${obj.kind}`];
      expect([file, obj.kind, Model ? 'known' : 'no schema']).toEqual([file, obj.kind, 'known']);
      expect(() => new Model!(obj).validate()).not.toThrow();
    }
  });

  it('the schemas do refuse a broken object (the validation is real)', () => {
    const broken = structuredClone(deployments[0]);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
    expect(() => new Deployment(broken).validate()).toThrow(/containerPort/);
    const scaled = structuredClone(ofKind('ScaledObject')[0]);
    scaled.spec.maxReplicaCount = 'many';
    expect(() => new ScaledObject(scaled).validate()).toThrow(/maxReplicaCount/);
  });

  it('every manifest is applied by a kustomization, except the Secret example the operator creates', () => {
    const listed = kustomizations.flatMap((k) => (k.obj.resources as string[]).map((r) => path.join(path.dirname(k.file), r)));
    for (const r of listed) expect([r, fs.existsSync(path.join(DIR, r))]).toEqual([r, true]);
    const applied = new Set([...listed, ...kustomizations.map((k) => k.file), 'secret.example.yaml']);
    expect(files.map((f) => path.relative(DIR, f)).filter((f) => !applied.has(f))).toEqual([]);
    expect(listed).not.toContain('secret.example.yaml');
    for (const k of kustomizations) {
      expect(k.obj.namespace).toBe(secret.metadata.namespace);
      // An overlay of the base (`..`) takes the image from it, so a release sets it in one place.
      // One that runs no pod (the PrometheusRule's) names no image.
      const runsPods = objects.some((o) => path.dirname(o.file) === path.dirname(k.file) && ['Deployment', 'Job'].includes(o.obj.kind));
      if ((k.obj.resources as string[]).includes('..') || !runsPods) expect([k.file, k.obj.images]).toEqual([k.file, undefined]);
      else expect(k.obj.images.map((i: { name: string }) => i.name)).toEqual([IMAGE]);
    }
  });

  it('every pod runs the image non-root, read-only, without capabilities, with requests and limits', () => {
    for (const { name, spec } of podSpecs) {
      expect([name, spec.securityContext?.runAsNonRoot, spec.securityContext?.seccompProfile?.type]).toEqual([name, true, 'RuntimeDefault']);
      expect([name, spec.automountServiceAccountToken]).toEqual([name, false]);
      for (const c of spec.containers) {
        expect([name, c.image?.split(':')[0]]).toEqual([name, IMAGE]);
        expect([name, c.securityContext]).toEqual([
          name,
          expect.objectContaining({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } }),
        ]);
        for (const kind of ['requests', 'limits'] as const) expect([name, kind, Object.keys(c.resources?.[kind] ?? {}).sort()]).toEqual([name, kind, ['cpu', 'memory']]);
        // The one writable path: /tmp (the video engine's ffmpeg scratch space), an emptyDir.
        const tmp = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
        expect([name, spec.volumes?.find((v) => v.name === tmp?.name)?.emptyDir]).toEqual([name, expect.objectContaining({ sizeLimit: expect.any(String) })]);
      }
    }
  });

  it('each process runs its built entry point, as the npm scripts and the image do', () => {
    const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    const entry = (script: string) => /node .*?(dist\/[\w-]+\.js)/.exec(scripts[script]!)![1];
    const expected: Record<string, string> = {
      api: entry('start:api')!,
      worker: entry('start:worker')!,
      dispatcher: entry('start:dispatcher')!,
      migrate: entry('migrate')!,
    };
    for (const { name, spec, labels } of podSpecs) {
      const component = labels['app.kubernetes.io/component']!;
      expect([name, spec.containers[0]!.command]).toEqual([name, ['node', '--enable-source-maps', expected[component]]]);
    }
  });

  it('probes /healthz and /readyz on the port each service listens on (PORT for the API, OPS_PORT for the others)', () => {
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0] as IContainer;
      const env = environmentOf(c);
      const port = componentOf(d) === 'api' ? env.PORT : env.OPS_PORT;
      const named = c.ports!.find((p) => String(p.containerPort) === port);
      expect([d.metadata.name, named?.name]).toEqual([d.metadata.name, expect.any(String)]);
      for (const [probe, pathExpected] of [['startupProbe', '/healthz'], ['livenessProbe', '/healthz'], ['readinessProbe', '/readyz']] as const) {
        expect([d.metadata.name, probe, c[probe]?.httpGet]).toEqual([d.metadata.name, probe, { path: pathExpected, port: named!.name }]);
      }
      const annotations = d.spec.template.metadata.annotations;
      expect([d.metadata.name, annotations['prometheus.io/port'], annotations['prometheus.io/path']]).toEqual([d.metadata.name, port, '/metrics']);
    }
  });

  it('gives each service the grace period its shutdown path needs (docs/operations.md "Shutdown")', () => {
    const env = configMap.data as Record<string, string>;
    const grace = (component: string) => deploymentsOf(component).map((d) => d.spec.template.spec.terminationGracePeriodSeconds as number);
    // API: drain, then in-flight requests for at most 10 s more; at least drain + 20 s.
    for (const g of grace('api')) expect(g).toBeGreaterThanOrEqual(Number(env.SHUTDOWN_DRAIN_MS) / 1000 + 20);
    // Worker: hands back and exits within 10 s.
    for (const g of grace('worker')) expect(g).toBeGreaterThanOrEqual(10);
    // Dispatcher: finishes attempts in flight, each at most WEBHOOK_TIMEOUT_MS; timeout + 10 s.
    for (const g of grace('dispatcher')) expect(g).toBeGreaterThanOrEqual(Number(env.WEBHOOK_TIMEOUT_MS) / 1000 + 10);
  });

  it('selectors, spread constraints, budgets and autoscalers point at the pods they mean', () => {
    for (const d of deployments) {
      const labels = d.spec.template.metadata.labels;
      expect([d.metadata.name, matches(d.spec.selector.matchLabels, labels)]).toEqual([d.metadata.name, true]);
      for (const t of d.spec.template.spec.topologySpreadConstraints) expect([d.metadata.name, t.labelSelector.matchLabels]).toEqual([d.metadata.name, d.spec.selector.matchLabels]);
      // Exactly one budget per Deployment, and no budget that blocks every eviction of a single replica.
      const budgets = ofKind('PodDisruptionBudget').filter((p) => matches(p.spec.selector.matchLabels, labels));
      expect([d.metadata.name, budgets.length, budgets[0]?.spec.maxUnavailable]).toEqual([d.metadata.name, 1, 1]);
      // Autoscaled Deployments leave `replicas` to their autoscaler.
      const scaled = ofKind('HorizontalPodAutoscaler').some((h) => h.spec.scaleTargetRef.name === d.metadata.name) || ofKind('ScaledObject').some((s) => s.spec.scaleTargetRef.name === d.metadata.name);
      expect([d.metadata.name, scaled ? d.spec.replicas : 'fixed']).toEqual([d.metadata.name, scaled ? undefined : 'fixed']);
    }
    const api = deploymentsOf('api')[0];
    const service = byName('Service', 'taskapi-api');
    expect(service.spec.selector).toEqual(api.spec.selector.matchLabels);
    expect(api.spec.template.spec.containers[0].ports.map((p: { name: string }) => p.name)).toContain(service.spec.ports[0].targetPort);
    const hpa = byName('HorizontalPodAutoscaler', 'taskapi-api');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: api.metadata.name });
    expect(hpa.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: expect.any(Number) } } }]);
  });

  it('runs one worker Deployment per task kind, each scaled by KEDA on the max of its kind\'s queue depth', () => {
    // The metric the query names is the gauge the API registers.
    const metrics = createMetrics({ queueSignals: async () => new Map() });
    expect(metrics.registry.getSingleMetric('taskapi_queue_depth')).toBeDefined();
    const workers = deploymentsOf('worker');
    expect(workers.map((w) => environmentOf(w.spec.template.spec.containers[0]).WORKER_KINDS).sort()).toEqual([...TASK_KINDS].sort());
    for (const w of workers) {
      const kind = environmentOf(w.spec.template.spec.containers[0]).WORKER_KINDS;
      const scaled = ofKind('ScaledObject').filter((s) => s.spec.scaleTargetRef.name === w.metadata.name);
      expect([kind, scaled.length]).toEqual([kind, 1]);
      const spec = scaled[0].spec;
      expect(spec.minReplicaCount).toBeLessThanOrEqual(spec.maxReplicaCount);
      expect(spec.cooldownPeriod).toBeGreaterThan(0);
      expect(spec.fallback.replicas).toBeGreaterThan(0);
      expect(spec.triggers).toEqual([
        {
          type: 'prometheus',
          metadata: expect.objectContaining({ query: `max(taskapi_queue_depth{kind="${kind}"})`, threshold: expect.stringMatching(/^\d+$/), ignoreNullValues: 'false' }),
        },
      ]);
    }
  });

  it('sets every configuration variable, secrets only in the Secret, and each pod loads a valid production configuration', () => {
    const inConfigMap = Object.keys(configMap.data);
    const inSecret = Object.keys(secret.stringData);
    const inEnv = deployments.flatMap((d) => (d.spec.template.spec.containers[0].env ?? []).map((e: { name: string }) => e.name));
    const missing = CONFIG_VARIABLES.filter((v) => !inConfigMap.includes(v) && !inSecret.includes(v) && !inEnv.includes(v) && !(v in OMITTED));
    expect(missing).toEqual([]);
    // And nothing the configuration does not read (a retired or misspelt variable is silently ignored).
    const unknown = [...inConfigMap, ...inSecret, ...inEnv].filter((v) => !CONFIG_VARIABLES.includes(v) && !(v in READ_ELSEWHERE));
    expect(unknown).toEqual([]);
    for (const v of SECRET_VARIABLES) expect([v, inSecret.includes(v), inConfigMap.includes(v)]).toEqual([v, true, false]);
    // What a pod starts with is a configuration the services accept (as in production).
    for (const d of deployments) {
      const env: Record<string, string> = { ...environmentOf(d.spec.template.spec.containers[0]), ...wellFormedSecrets };
      const config = loadConfig(env);
      expect(config.nodeEnv).toBe('production');
      if (componentOf(d) === 'worker') expect(config.workerKinds).toEqual([env.WORKER_KINDS]);
    }
    // The migration needs only DATABASE_URL, from a key the Secret has.
    const job = ofKind('Job')[0];
    const dbRef = job.spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'DATABASE_URL');
    expect(inSecret).toContain(dbRef.valueFrom.secretKeyRef.key);
  });

  it('keeps the PostgreSQL connection budget of docs/operations.md in step with the replica limits', () => {
    const env = configMap.data as Record<string, string>;
    // Pool sizes as the processes size them: the API from DATABASE_POOL_SIZE
    // (services/api/src/deps.ts); a worker WORKER_CONCURRENCY × its kinds + 2
    // (services/worker/src/main.ts); a dispatcher min(DISPATCHER_CONCURRENCY, 20) + 2
    // (services/webhook-dispatcher/src/main.ts); the migration one connection.
    const apiMax = byName('HorizontalPodAutoscaler', 'taskapi-api').spec.maxReplicas * Number(env.DATABASE_POOL_SIZE);
    const workerMax = ofKind('ScaledObject').reduce((sum, s) => sum + s.spec.maxReplicaCount * (Number(env.WORKER_CONCURRENCY) + 2), 0);
    const dispatcherMax = deploymentsOf('dispatcher').reduce((sum, d) => sum + d.spec.replicas * (Math.min(Number(env.DISPATCHER_CONCURRENCY), 20) + 2), 0);
    const total = apiMax + workerMax + dispatcherMax + 1;
    const guide = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
    const section = guide.slice(guide.indexOf('## Deploying on Kubernetes'));
    expect(section).toContain(`**${total}** connections`);
  });
});

describe('deploy/kubernetes/models (the example GPU model server)', () => {
  const overlayFile = path.join('models', 'kustomization.yaml');
  const overlay = kustomizations.find((k) => k.file === overlayFile)!.obj;
  /** The overlay's patches, parsed: a strategic merge patch is an object, a JSON 6902 patch a list of operations. */
  const patches = (overlay.patches as Array<{ target: { kind: string; name: string }; patch: string }>).map((p) => ({ target: p.target, patch: parse(p.patch) }));
  const patchOf = (kind: string, name: string) => patches.find((p) => p.target.kind === kind && p.target.name === name)?.patch;
  const serviceOf = (d: any) => ofKind('Service').find((s) => matches(s.spec.selector, d.spec.template.metadata.labels));
  const containerOf = (d: any) => d.spec.template.spec.containers[0] as IContainer;
  const cogPort = (c: IContainer) => c.ports!.find((p) => p.containerPort === 5000);

  it('is an overlay of the base: the default kustomization does not run a GPU server', () => {
    expect(overlay.resources).toEqual(['..', 'image-model.yaml']);
    expect(modelDeployments.map((d) => d.metadata.name)).toEqual(['image-model']);
    const files = objects.filter((o) => o.obj.kind === 'Deployment' && componentOf(o.obj) === MODEL).map((o) => o.file);
    expect(files).toEqual([path.join('models', 'image-model.yaml')]);
    // Every patch names an object the overlay builds.
    for (const p of patches) expect([p.target, byName(p.target.kind, p.target.name) ? 'exists' : 'missing']).toEqual([p.target, 'exists']);
  });

  it('runs one Cog server per Service, on one GPU, listening on port 5000', () => {
    for (const d of modelDeployments) {
      const name = d.metadata.name as string;
      const c = containerOf(d);
      // Predictions are created, re-attached to and cancelled by id on the one server at the URL.
      expect([name, d.spec.replicas, d.spec.strategy.type]).toEqual([name, 1, 'Recreate']);
      expect([name, String(c.resources?.limits?.['nvidia.com/gpu'])]).toEqual([name, '1']);
      const port = cogPort(c);
      expect([name, port?.name]).toEqual([name, expect.any(String)]);
      const service = serviceOf(d);
      expect([name, service?.spec.selector]).toEqual([name, d.spec.selector.matchLabels]);
      expect([name, service.spec.ports]).toEqual([name, [expect.objectContaining({ port: 5000, targetPort: port!.name })]]);
      // A starting server answers 503 (busy: the task waits) instead of refusing connections (an attempt spent).
      expect([name, service.spec.publishNotReadyAddresses]).toEqual([name, true]);
      // The Task API pods' hardening, as far as a Cog image (root, writing its own files) allows.
      const spec = d.spec.template.spec as IPodSpec;
      expect([name, spec.automountServiceAccountToken, spec.securityContext?.seccompProfile?.type]).toEqual([name, false, 'RuntimeDefault']);
      expect([name, c.securityContext]).toEqual([name, expect.objectContaining({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })]);
    }
  });

  it('probes /health-check by the status in its JSON, since it answers 200 in every state', () => {
    for (const d of modelDeployments) {
      const c = containerOf(d);
      // Each probe is `python -c <check> <status>...`: the check reads the `status` of the container's
      // own /health-check and exits 0 when it is one of the arguments.
      const accepted = (probe: 'startupProbe' | 'livenessProbe' | 'readinessProbe') => {
        const p = c[probe]!;
        const command = p.exec?.command ?? [];
        expect([d.metadata.name, probe, p.httpGet, command.slice(0, 2)]).toEqual([d.metadata.name, probe, undefined, ['python', '-c']]);
        const check = command[2]!;
        expect(check).toContain(`http://127.0.0.1:${cogPort(c)!.containerPort}/health-check`);
        expect(check).toContain("['status']; sys.exit(s not in sys.argv[1:])");
        // The request gives up before the probe does, so a hung server fails the probe rather than timing it out.
        expect(Number(/timeout=(\d+)/.exec(check)![1])).toBeLessThan(p.timeoutSeconds!);
        return command.slice(3).sort();
      };
      // Ready while it takes predictions, the rule of the workers' own /readyz.
      expect(accepted('readinessProbe')).toEqual(['BUSY', 'READY']);
      // Started once setup is over, well or not (a failed setup is liveness's to restart at once),
      // with room for a first start that downloads weights.
      expect(accepted('startupProbe')).toEqual(expect.arrayContaining(['READY', 'BUSY', 'SETUP_FAILED']));
      expect(accepted('startupProbe')).not.toContain('STARTING');
      expect(c.startupProbe!.periodSeconds! * c.startupProbe!.failureThreshold!).toBeGreaterThanOrEqual(600);
      // Alive unless its setup failed or it went defunct (or it stopped answering).
      expect(accepted('livenessProbe')).toEqual(expect.arrayContaining(['READY', 'BUSY']));
      for (const dead of ['SETUP_FAILED', 'DEFUNCT']) expect(accepted('livenessProbe')).not.toContain(dead);
    }
  });

  it("points its kind's workers at the Service, and they load a valid configuration", () => {
    const api = byName('Service', 'taskapi-api');
    for (const d of modelDeployments) {
      const kind = d.spec.template.metadata.labels['taskapi/task-kind'] as string;
      if (!isTaskKind(kind)) throw new Error(`${d.metadata.name}: taskapi/task-kind ${kind} is not a task kind`);
      const engine = TASK_KIND_CATALOG[kind].engine;
      const worker = deploymentsOf('worker').find((w) => environmentOf(containerOf(w)).WORKER_KINDS === kind);
      const patched = patchOf('Deployment', worker.metadata.name).spec.template.spec.containers.find((c: IContainer) => c.name === containerOf(worker).name);
      const env = Object.fromEntries((patched.env as Array<{ name: string; value: string }>).map((e) => [e.name, e.value]));
      const service = serviceOf(d);
      const url = `http://${service.metadata.name}:${service.spec.ports[0].port}`;
      expect(env).toEqual({ [engine.variable]: 'cog', [engine.cogUrl]: url });
      const config = loadConfig({ ...environmentOf(containerOf(worker)), ...env, ...wellFormedSecrets });
      expect([config.workerKinds, config.engines[kind], config.cog[kind].url]).toEqual([[kind], 'cog', url]);
      // Model servers post their webhooks to the API's Service, not through the public address.
      const webhookBase = new URL(config.cogWebhookBaseUrl);
      expect([webhookBase.hostname, Number(webhookBase.port || 80)]).toEqual([api.metadata.name, api.spec.ports[0].port]);
      // More workers than one server runs predictions at once would only collect its 409s.
      const scaled = byName('ScaledObject', worker.metadata.name).spec;
      const ops = patchOf('ScaledObject', worker.metadata.name);
      expect(ops).toEqual([{ op: 'replace', path: '/spec/maxReplicaCount', value: expect.any(Number) }]);
      expect(ops[0].value).toBeGreaterThanOrEqual(Math.max(scaled.minReplicaCount, scaled.fallback.replicas));
      expect(ops[0].value).toBeLessThan(scaled.maxReplicaCount);
    }
  });
});

describe('deploy/kubernetes/monitoring (the alerting rules as a PrometheusRule)', () => {
  it('is what `npm run generate:prometheus-rule` writes from deploy/prometheus/taskapi-rules.yml, byte for byte', () => {
    const committed = fs.readFileSync(PROMETHEUS_RULE_FILE, 'utf8');
    const fresh = generatePrometheusRule();
    if (committed !== fresh) throw new Error('deploy/kubernetes/monitoring/prometheus-rule.yaml is out of date with the rules: run `npm run generate:prometheus-rule` and commit the result.');
    expect(committed).toBe(fresh);
  });

  it('holds exactly the rules file\'s groups, and is applied apart from the base', () => {
    const [rule] = ofKind('PrometheusRule');
    expect(ofKind('PrometheusRule')).toHaveLength(1);
    expect(rule.spec.groups).toEqual((parse(fs.readFileSync(RULES_FILE, 'utf8')) as { groups: unknown }).groups);
    expect(rule.spec.groups.flatMap((g: { rules: unknown[] }) => g.rules).length).toBeGreaterThan(5);
    const base = kustomizations.find((k) => k.file === 'kustomization.yaml')!;
    expect(base.obj.resources).not.toContain('monitoring');
    expect(kustomizations.find((k) => k.file === 'monitoring/kustomization.yaml')!.obj.resources).toEqual(['prometheus-rule.yaml']);
  });

  it('refuses rules that would change when copied, or a malformed rule (the checks are real)', () => {
    expect(() => generatePrometheusRule('groups:\n  - name: a\n    rules: []\nextra: 1\n')).toThrow(/only "groups:"/);
    expect(() => generatePrometheusRule('rule_files: []\n')).toThrow(/no top-level "groups:"/);
    const [rule] = ofKind('PrometheusRule');
    const broken = structuredClone(rule);
    broken.spec.groups[0].rules[0].for = 5;
    expect(() => new PrometheusRule(broken).validate()).toThrow(/for/);
  });
});

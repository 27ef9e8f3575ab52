// What a kind's model server declares it takes (the `Input` component of the OpenAPI document Cog
// serves at `GET /openapi.json`) against what the worker will send it (docs/models.md, "The model's
// inputs, checked first"). Cog drops inputs a model does not declare, so a renamed or forgotten
// field shows up only as the model missing its own required input, one charged and refunded task at
// a time; this finds it before the first prediction.
import { TASK_KIND_CATALOG, type TaskKind } from '@taskapi/task-kinds';

/** The JSON type of each field the worker sends a model (an image goes as a `data:` URL). */
const SENT_TYPES: Record<string, 'string' | 'integer'> = {
  prompt: 'string',
  width: 'integer',
  height: 'integer',
  duration_seconds: 'integer',
  image: 'string',
};

/** One field the worker sends: our name, the model's (after `COG_INPUT_MAP_<KIND>`), its JSON type. */
export interface SentInput {
  ours: string;
  theirs: string;
  type: 'string' | 'integer';
}

/** What the kind's model gets, by the model's names. */
export function sentInputs(kind: TaskKind, inputMap: Readonly<Record<string, string>> | undefined): SentInput[] {
  return TASK_KIND_CATALOG[kind].engine.modelInputs.map((ours) => ({ ours, theirs: inputMap?.[ours] ?? ours, type: SENT_TYPES[ours] ?? 'string' }));
}

/** What the check found: what makes the kind not ready, and what the model will drop (harmless). */
export interface InputCheck {
  problems: string[];
  undeclared: string[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Inputs a document may declare before it is not taken for a model's (a hostile one is "no schema"). */
const MAX_PROPERTIES = 1000;

/**
 * The inputs the model declares checked against `sent`: a required input nothing fills, or one
 * whose declared type cannot take what is sent (a string where the model wants an integer), is a
 * problem; an input it does not declare is named as dropped. Null when the document declares no
 * `Input` schema the worker can read (not Cog's, or no properties): the model is then trusted.
 * `mapVariable` names the setting that renames fields, for the problem's fix.
 */
export function checkInputs(document: unknown, sent: readonly SentInput[], mapVariable: string): InputCheck | null {
  const schemas = isObject(document) && isObject(document.components) && isObject(document.components.schemas) ? document.components.schemas : undefined;
  const input = schemas?.Input;
  if (!isObject(input) || !isObject(input.properties)) return null;
  const properties = input.properties;
  if (Object.keys(properties).length > MAX_PROPERTIES) return null;
  const required = Array.isArray(input.required) ? input.required.filter((r): r is string => typeof r === 'string') : [];
  const problems: string[] = [];
  const filled = new Set(sent.map((s) => s.theirs));
  for (const name of required) {
    if (!Object.hasOwn(properties, name) || filled.has(name)) continue;
    problems.push(`its required input "${short(name)}" gets nothing (the worker sends ${sent.map((s) => `"${s.theirs}"`).join(', ')}; rename one with ${mapVariable}=ours=${short(name)})`);
  }
  const undeclared: string[] = [];
  for (const s of sent) {
    if (!Object.hasOwn(properties, s.theirs)) {
      undeclared.push(s.theirs);
      continue;
    }
    const type = declaredType(properties[s.theirs], schemas);
    if (type === undefined) continue;
    const takes = s.type === 'integer' ? type === 'integer' || type === 'number' : type === 'string';
    if (!takes) problems.push(`its input "${s.theirs}" is ${article(type)} ${short(type)} and the worker sends ${article(s.type)} ${s.type} (our "${s.ours}")`);
  }
  return { problems, undeclared };
}

/** A property's JSON type: its own `type`, or that of the component a Cog choice refers to (`allOf: [{$ref}]`). */
function declaredType(property: unknown, schemas: Json | undefined): string | undefined {
  if (!isObject(property)) return undefined;
  if (typeof property.type === 'string') return property.type;
  const ref = Array.isArray(property.allOf) && isObject(property.allOf[0]) ? property.allOf[0].$ref : undefined;
  const m = typeof ref === 'string' ? /^#\/components\/schemas\/([^/]+)$/.exec(ref) : null;
  const target = m && schemas && Object.hasOwn(schemas, m[1]!) ? schemas[m[1]!] : undefined;
  return isObject(target) && typeof target.type === 'string' ? target.type : undefined;
}

/** A name from the document, quoted safely on one line. */
function short(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f"]+/g, ' ');
  return clean.length > 64 ? `${clean.slice(0, 63)}…` : clean;
}

const article = (word: string) => (/^[aeiou]/i.test(word) ? 'an' : 'a');

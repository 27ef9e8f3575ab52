// One lint setup for every workspace.
import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// The API's layers, lowest first: a module may import from its own layer and the layers below it,
// never from one above (docs/architecture.md, "Layers of the API").
const API = 'services/api/src';
const API_LAYERS = [
  [`${API}/errors.ts`, `${API}/schemas`, `${API}/infra`, `${API}/repositories`, `${API}/console`],
  [`${API}/domain`],
  [`${API}/deps.ts`],
  [`${API}/http`],
  [`${API}/openapi`],
  [`${API}/routes`],
  [`${API}/app.ts`, `${API}/main.ts`, `${API}/admin`],
];
const apiLayerZones = API_LAYERS.slice(0, -1).map((layer, i) => ({
  target: layer,
  from: API_LAYERS.slice(i + 1).flat(),
  message: 'imports point down the API layers (docs/architecture.md, "Layers of the API")',
}));

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', 'packages/db/src/generated/**', 'coverage/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-empty': ['error', { allowEmptyCatch: false }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // No import cycles in any service or package, and no import up the API's layers.
    files: ['services/*/src/**/*.ts', 'packages/*/src/**/*.ts'],
    ignores: ['packages/db/src/generated/**'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: apiLayerZones }],
    },
  },
  {
    // Redis scripts are `.lua` files, one command a file, called through a typed layer
    // (packages/redis-scripts; docs/architecture.md, "Redis scripts"): no Lua inside TypeScript.
    files: ['services/*/src/**/*.ts', 'packages/*/src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'TemplateElement[value.raw=/redis\\.p?call\\s*\\(/]', message: 'Redis scripts live in .lua files (src/commands), not in TypeScript strings.' },
        { selector: 'Literal[value=/redis\\.p?call\\s*\\(/]', message: 'Redis scripts live in .lua files (src/commands), not in TypeScript strings.' },
      ],
    },
  },
  {
    // A task's state changes only in its lifecycle (docs/architecture.md, "A task's life"): no
    // service or other package builds the scheduler, the task statements or the marker writes.
    files: ['services/*/src/**/*.ts', 'packages/*/src/**/*.ts'],
    ignores: ['packages/task-lifecycle/**', 'packages/scheduler/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@taskapi/scheduler', importNames: ['FairScheduler', 'FifoForBench', 'createTaskScheduler'], allowTypeImports: true, message: 'The task lifecycle (@taskapi/task-lifecycle) is the scheduler\'s only caller.' },
            { name: '@taskapi/task-lifecycle', importNames: ['TaskLifecycle', 'TaskRows', 'StatusMarkers', 'TransitionWriter'], allowTypeImports: true, message: 'Build the lifecycle with createTaskLifecycle; its stores are its own.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/test/**/*.ts', 'packages/testing/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.cjs', '**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    // The console's browser scripts (ES modules served as they are, no build step).
    files: ['services/api/src/console/public/**/*.js', 'docs/examples/**/page.js'],
    languageOptions: { sourceType: 'module', globals: globals.browser },
    rules: { eqeqeq: ['error', 'always'], 'no-empty': ['error', { allowEmptyCatch: false }] },
  },
);

import { checkBoundaries, extractImports, formatViolation, type ProjectInfo } from '../../scripts/lib/boundaries';

const projects: ProjectInfo[] = [
  { name: 'contracts', packageName: '@gmg/contracts', root: 'libs/contracts', tags: ['scope:lib', 'type:contracts'] },
  { name: 'db', packageName: '@gmg/db', root: 'libs/db', tags: ['scope:lib'] },
  { name: 'queue', packageName: '@gmg/queue', root: 'libs/queue', tags: ['scope:lib'] },
  { name: 'api-edge', packageName: '@gmg/svc-api-edge', root: 'services/api-edge', tags: ['scope:service'] },
  { name: 'billing', packageName: '@gmg/svc-billing', root: 'services/billing', tags: ['scope:service'] },
];

const check = (file: string, text: string) => checkBoundaries(projects, [{ file, text }]);
const rules = (file: string, text: string) => check(file, text).map((v) => v.rule);

describe('extractImports', () => {
  it('finds static, side-effect, re-export, require and dynamic imports with their line numbers', () => {
    const text = [
      "import { a } from '@gmg/db';",
      "import '@gmg/queue';",
      "export * from './x';",
      "const b = require('pg');",
      "async function f() { return import('@gmg/contracts'); }",
      "// import { c } from '@gmg/commented-out';",
      "/* import { d } from '@gmg/block-comment'; */",
      "const s = \"import x from '@gmg/in-a-string'\";",
    ].join('\n');
    expect(extractImports(text)).toEqual([
      { specifier: '@gmg/db', line: 1 },
      { specifier: '@gmg/queue', line: 2 },
      { specifier: './x', line: 3 },
      { specifier: 'pg', line: 4 },
      { specifier: '@gmg/contracts', line: 5 },
    ]);
  });
});

describe('checkBoundaries', () => {
  it('accepts a service importing libs through their roots and a lib importing another lib', () => {
    expect(check('services/api-edge/src/main.ts', "import { x } from '@gmg/db';\nimport { y } from '@gmg/contracts';\nimport express from 'express';")).toEqual([]);
    expect(check('libs/db/src/seed.ts', "import { toMinor } from '@gmg/contracts';\nimport { r } from './repositories/sql';")).toEqual([]);
  });

  it('rejects a lib importing a service', () => {
    const [v] = check('libs/db/src/bad.ts', "\n\nimport { app } from '@gmg/svc-api-edge';");
    expect(v).toMatchObject({ rule: 'lib-imports-service', file: 'libs/db/src/bad.ts', line: 3, specifier: '@gmg/svc-api-edge' });
    expect(formatViolation(v)).toContain('libs/db/src/bad.ts:3');
  });

  it('rejects a service importing another service', () => {
    expect(rules('services/billing/src/main.ts', "import { x } from '@gmg/svc-api-edge';")).toEqual(['service-imports-service']);
  });

  it('rejects contracts importing any @gmg package, even another lib', () => {
    expect(rules('libs/contracts/src/index.ts', "import { Logger } from '@gmg/queue';")).toEqual(['contracts-imports-internal']);
    expect(rules('libs/contracts/src/index.ts', "import Joi from 'joi';")).toEqual([]);
  });

  it('rejects deep imports into a package', () => {
    expect(rules('services/api-edge/src/app.ts', "import { TaskEntity } from '@gmg/db/src/entities/task.entity';")).toEqual(['deep-import']);
  });

  it('rejects relative imports that escape the project folder, also into a sibling with the same prefix', () => {
    expect(rules('services/api-edge/src/app.ts', "import { x } from '../../../libs/db/src/index';")).toEqual(['relative-escape']);
    expect(rules('libs/db/src/a.ts', "import { x } from '../../db-extra/src/y';")).toEqual(['relative-escape']);
    expect(rules('libs/db/src/repositories/a.ts', "import { x } from '../../package.json';")).toEqual([]);
  });

  it('rejects unknown @gmg packages and a project importing itself by name', () => {
    expect(rules('services/api-edge/src/app.ts', "import { x } from '@gmg/nope';")).toEqual(['unknown-project']);
    expect(rules('libs/db/src/a.ts', "import { x } from '@gmg/db';")).toEqual(['self-import']);
  });

  it('ignores files that belong to no project', () => {
    expect(check('scripts/start.ts', "import { x } from '@gmg/svc-api-edge';")).toEqual([]);
  });
});

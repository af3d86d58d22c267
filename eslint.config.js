import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Secrets and request data go through the logger with redaction, never the console.
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  {
    // The web console runs in the browser, as plain ES modules.
    files: ['console/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
  },
  {
    // Benchmarks print their figures.
    files: ['bench/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // The dependency direction (STYLE.md): core never imports an adapter or fastify.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/http/**', '**/mcp/**', '**/gateway/**', '**/forwarder/**', '**/cli/**', '**/runtime/**'],
              message: 'src/core must not import an adapter (STYLE.md: dependency direction).',
            },
            { group: ['fastify', 'fastify/*', '@fastify/*'], message: 'src/core knows nothing of HTTP.' },
          ],
        },
      ],
    },
  },
  {
    // process.env is read in src/config.ts and nowhere else in src/.
    files: ['src/**/*.ts'],
    ignores: ['src/config.ts', 'src/cli/**'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through src/config.ts.' }],
    },
  },
);

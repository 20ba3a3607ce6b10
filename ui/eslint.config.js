// ESLint for the front end: the recommended JavaScript and typescript-eslint
// rules, and React's hook rules (rules of hooks, exhaustive effect
// dependencies, and the React Compiler's checks). Formatting is Prettier's
// (`.prettierrc.json`), so no stylistic rule runs here. No file imports
// another in a circle (`import-x/no-cycle`, type-only imports included: a
// circle of types is still a circle in the picture).
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  // Generated (ts-rs) and built files are not ours to lint.
  { ignores: ["dist/", "node_modules/", "src/bindings/"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  reactHooks.configs.flat.recommended,
  {
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      // `_name` marks a value left out on purpose (a destructured field dropped).
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", ignoreRestSiblings: true }],
    },
  },
  {
    plugins: { "import-x": importX },
    settings: {
      "import-x/resolver-next": [createNodeResolver({ extensions: [".ts", ".tsx", ".js", ".mjs", ".json"] })],
      "import-x/extensions": [".ts", ".tsx", ".js", ".mjs"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts", ".tsx"] },
    },
    rules: { "import-x/no-cycle": ["error", { ignoreExternal: true }] },
  },
  {
    // Node scripts: the end-to-end runs, the build check, the Vite config.
    // They hold no React: a helper named `use…` there is not a hook.
    files: ["e2e/**/*.mjs", "scripts/**/*.mjs", "vite.config.ts", "eslint.config.js"],
    languageOptions: { globals: { ...globals.node } },
    rules: { "react-hooks/rules-of-hooks": "off" },
  },
);

/**
 * Vitest set-up: waits in DOM tests (`waitFor`, `findBy…`) allow 5 s instead
 * of Testing Library's 1 s, since CI machines with two busy cores render the
 * app more slowly; a passing wait still returns as soon as it holds.
 */
import { configure } from "@testing-library/react";

configure({ asyncUtilTimeout: 5000 });

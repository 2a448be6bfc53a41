// Types of the one export of scripts/bundle-trims.mjs that a test imports (test/packaging/bundle-names.test.ts).
/** The agent bundle's no-op `__name(X,"X")` calls blanked to `X` and spaces; throws as the build fails. */
export function blankNoOpNames(text: string, inputs: [string, string][]): { text: string; blanked: number };

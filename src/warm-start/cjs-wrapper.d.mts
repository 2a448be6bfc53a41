// Types of cjs-wrapper.mjs (plain ESM shared with scripts/build.mjs).

/** The wrapper's opening: a function of CommonJS's five module variables. */
export declare const CJS_WRAPPER: string;

/** The wrapper's closing, after the module's text. */
export declare const CJS_WRAPPER_END: string;

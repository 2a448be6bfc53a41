// esbuild bundles the stylesheet imported by main.tsx into the CSS output.
declare module '*.css';

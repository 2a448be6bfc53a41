// The task environment (Nomad's client/taskenv): the variables a task gets
// and the only run-time `${...}` interpolation in Berth.
export { TaskEnv, TaskEnvBuilder, taskEnvDirs, portVariables, type TaskEnvBuilderOptions, type TaskEnvDirs, type TaskEnvNode, type TaskEnvNetwork } from './task-env.js';

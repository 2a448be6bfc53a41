// The task environment (Nomad's client/taskenv): the variables a task gets
// and the only run-time `${...}` interpolation in Berth.
export { TaskEnv, TaskEnvBuilder, taskEnvDirs, type TaskEnvBuilderOptions, type TaskEnvDirs, type TaskEnvNode } from './task-env.js';

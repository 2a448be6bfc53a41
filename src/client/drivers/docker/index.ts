// The docker task driver: tasks as containers of the node's dockerd (Engine API).
export { DockerDriver, dockerEndpoint, type DockerDriverOptions, type DockerTaskHandle } from './docker-driver.js';
export { dockerMessage } from './_engine.js';
export { LABEL as DOCKER_LABELS, containerName, pauseContainerName } from './_container-spec.js';

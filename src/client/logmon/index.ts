// The host's log collector for external driver plugins (Nomad's logmon):
// FIFOs handed to the driver, read into rotated files by one detached
// process per node.
export { LogMonitor, logFifos, LogMonitorError, type LogMonitorErrorCode, type LogMonitorTarget, type LogFifos } from './log-monitor.js';

export interface StartOptions {
  /** Extra redis-server style flags, e.g. ['--maxmemory', '10mb']. */
  args?: (string | number)[];
  /** The oxidis-server binary (default: $OXIDIS_SERVER_BIN, the repository's build, PATH). */
  binary?: string;
  host?: string;
  /** Start with --enable-test-controls yes (OXIDIS CLOCK / FAULT / CHECKPOINT ...). */
  testControls?: boolean;
  /** Milliseconds to wait for the server to start (default 10000). */
  startupTimeout?: number;
}

export interface OxidisServer {
  port: number;
  host: string;
  /** redis://HOST:PORT */
  url: string;
  pid: number;
  /** What the server has logged so far. */
  log(): string;
  stop(): Promise<void>;
}

export function startServer(opts?: StartOptions): Promise<OxidisServer>;
export function findBinary(binary?: string): string;

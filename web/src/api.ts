// Typed client for the tidal serve REST API (docs/server-api.md).
// Every call carries the bearer token; a 401 raises UnauthorizedError so the
// app can ask for a new token, every other failure raises ApiError with the
// daemon's error shape {error: {code, message, field}} when it sent one.

export type JobState = 'accepted' | 'pending' | 'running' | 'succeeded' | 'cancelled' | 'failed';

export interface Cluster {
  now: number;
  speed: number;
  nodes: number;
  gpus: number;
  gpus_allocated: number;
  allocation_ratio: number;
  fragmentation_ratio: number;
  pending_jobs: number;
  running_jobs: number;
  cycles: number;
}

export interface Domain {
  id: number;
  name: string;
  level: string;
  parent: number | null;
  gpus: number;
  gpus_allocated: number;
  gpus_fragmented: number;
}

export interface Topology {
  levels: string[];
  domains: Domain[];
}

export interface Placement {
  node: string;
  gpus: number[];
}

export interface Job {
  id: number;
  name: string;
  tenant: string;
  source: string;
  state: JobState;
  gpus: number;
  gpu_milli: number;
  gpu_model: string[];
  tier: string;
  priority: number;
  estimated_runtime_s: number;
  submitted_at: number;
  started_at: number | null;
  ended_at: number | null;
  placement: Placement[];
  preemptions: number;
  cancel_requested: boolean;
  reason: string;
}

export interface JobList {
  jobs: Job[];
  next_page_token: string;
}

export interface Cause {
  kind: string;
  detail: string;
  shortfall: number;
  /** unit of the shortfall: gpu, milli-cpu or MiB */
  shortfall_unit?: string;
  resolvable: boolean;
}

export interface Explain {
  job_id: number;
  state: JobState;
  now: number;
  causes: Cause[];
  start_estimate: { p50: number | null; p90: number | null; samples: number } | null;
}

export interface Tenant {
  name: string;
  parent: string;
  tier: string;
  floor_gpus: number;
  in_use_gpus: number;
  borrowed_gpus: number;
  lent_gpus: number;
  pending_jobs: number;
  running_jobs: number;
  /** credits as a decimal string; null when the tenant has no ledger account */
  balance: string | null;
}

export interface Price {
  gpu_model: string;
  tier: string;
  per_gpu_hour: string;
}

export interface PricePoint {
  at: number;
  per_gpu_hour: string;
}

export interface Report {
  name: string;
  url: string;
}

export interface WhoAmI {
  id: string;
  role: string;
  tenant: string | null;
  name: string;
}

export interface SubmitRequest {
  tenant: string;
  gpus: number;
  estimated_runtime_s: number;
  name?: string;
}

export interface ErrorBody {
  code: string;
  message: string;
  field?: string;
}

export class ApiError extends Error {
  constructor(
    readonly path: string,
    readonly status: number,
    readonly body: ErrorBody | null,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
  get field(): string | undefined {
    return this.body?.field || undefined;
  }
}

export class UnauthorizedError extends ApiError {
  constructor(path: string, body: ErrorBody | null) {
    super(path, 401, body, body?.message || 'the daemon refused the token');
    this.name = 'UnauthorizedError';
  }
}

function errorBody(value: unknown): ErrorBody | null {
  if (typeof value !== 'object' || value === null) return null;
  const err = (value as { error?: unknown }).error;
  if (typeof err !== 'object' || err === null) return null;
  const e = err as Record<string, unknown>;
  if (typeof e.code !== 'string' || typeof e.message !== 'string') return null;
  return { code: e.code, message: e.message, field: typeof e.field === 'string' ? e.field : undefined };
}

export class Client {
  constructor(
    private readonly token: string,
    private readonly onUnauthorized: (err: UnauthorizedError) => void,
  ) {}

  /** Raw authenticated fetch (also used for /reports/ files). */
  async fetchRaw(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${this.token}`);
    let res: Response;
    try {
      res = await fetch(path, { ...init, headers, cache: 'no-store' });
    } catch (e) {
      throw new ApiError(path, 0, null, `daemon unreachable (${e instanceof Error ? e.message : String(e)})`);
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    let body: ErrorBody | null = null;
    try {
      body = errorBody(JSON.parse(text));
    } catch {
      body = null;
    }
    if (res.status === 401) {
      const err = new UnauthorizedError(path, body);
      this.onUnauthorized(err);
      throw err;
    }
    const detail = body ? `${body.code}: ${body.message}` : text.slice(0, 200) || res.statusText;
    throw new ApiError(path, res.status, body, `HTTP ${res.status} ${detail}`);
  }

  private async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const res = await this.fetchRaw(path, init);
    try {
      return (await res.json()) as T;
    } catch {
      throw new ApiError(path, res.status, null, 'the answer is not JSON');
    }
  }

  cluster(): Promise<Cluster> {
    return this.json('/v1/cluster');
  }
  topology(): Promise<Topology> {
    return this.json('/v1/cluster/topology');
  }
  jobs(state: JobState, limit = 200): Promise<JobList> {
    const q = new URLSearchParams({ state, limit: String(limit) });
    return this.json(`/v1/jobs?${q}`);
  }
  job(id: number): Promise<Job> {
    return this.json(`/v1/jobs/${encodeURIComponent(id)}`);
  }
  explain(id: number): Promise<Explain> {
    return this.json(`/v1/jobs/${encodeURIComponent(id)}/explain`);
  }
  submit(req: SubmitRequest): Promise<Job> {
    return this.json('/v1/jobs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(req),
    });
  }
  tenants(): Promise<{ tenants: Tenant[] }> {
    return this.json('/v1/tenants');
  }
  prices(): Promise<{ prices: Price[] }> {
    return this.json('/v1/prices');
  }
  priceHistory(gpuModel: string, tier: string): Promise<{ points: PricePoint[] }> {
    const q = new URLSearchParams({ gpu_model: gpuModel, tier });
    return this.json(`/v1/prices/history?${q}`);
  }
  reports(): Promise<{ reports: Report[] }> {
    return this.json('/v1/reports');
  }
  whoami(): Promise<WhoAmI> {
    return this.json('/v1/whoami');
  }
}

/** The [kubernetes] section: the kubelet's pod-resources socket and where pod metadata comes from. */
import { defineSection } from '../../core/config/schema.js';

export const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

export const KUBERNETES_SECTION = defineSection({
  name: 'kubernetes',
  description:
    'Kubernetes attribution: the kubelet pod-resources API (which container holds which GPU) ' +
    'and pod metadata from the API server or the kubelet.',
  keys: [
    {
      key: 'socket',
      type: 'path',
      required: true,
      default: '/var/lib/kubelet/pod-resources/kubelet.sock',
      description: 'The kubelet pod-resources API v1 socket (gRPC, unix).',
    },
    {
      key: 'resources',
      type: 'list',
      default: ['nvidia.com/gpu', 'nvidia.com/mig-*', 'amd.com/gpu', 'habana.ai/gaudi'],
      description:
        'Device-plugin resource names whose device ids are GPUs (a trailing * matches a prefix). ' +
        'Their ids are matched to GPU UUIDs: a UUID (with a time-slicing "::N" suffix), a MIG id ' +
        '(MIG-<uuid> or MIG-GPU-<uuid>/<gi>/<ci>) or a PCI bus id; an id that names no GPU for sure ' +
        'stays unmatched (doctor lists it).',
    },
    {
      key: 'dra_drivers',
      type: 'list',
      default: ['gpu.nvidia.com', 'gpu.amd.com'],
      description:
        'Dynamic resource allocation drivers whose claimed devices are GPUs; their device names are ' +
        'matched to GPUs like device-plugin ids, and gpu.nvidia.com\'s "gpu-<N>" as the GPU at ' +
        '/dev/nvidia<N>.',
    },
    {
      key: 'node_name',
      type: 'string',
      default: null,
      example: 'gpu-node-17',
      env: [{ name: 'NODE_NAME' }, { name: 'K8S_NODE_NAME' }],
      description: "This node's name in Kubernetes (the DaemonSet passes spec.nodeName as $NODE_NAME; default: the host name).",
    },
    {
      key: 'pods_source',
      type: 'enum',
      values: ['apiserver', 'kubelet', 'none'],
      default: 'apiserver',
      description:
        'Where pod metadata (uid, labels, owners) comes from: apiserver = GET ' +
        '/api/v1/pods?fieldSelector=spec.nodeName=<node> (RBAC: list pods); kubelet = GET /pods on ' +
        "the kubelet's authenticated port (RBAC: get nodes/proxy, a broader right); none = pod, " +
        'namespace and container names only.',
    },
    {
      key: 'api_url',
      type: 'url',
      default: null,
      example: 'https://10.96.0.1:443',
      description: 'The API server (default: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, as in every pod).',
    },
    {
      key: 'kubelet_url',
      type: 'url',
      default: null,
      example: 'https://10.0.3.17:10250',
      description: "The kubelet's authenticated port (default: https://$NODE_IP:10250; the DaemonSet passes status.hostIP as $NODE_IP).",
    },
    {
      key: 'token_file',
      type: 'path',
      default: `${SERVICE_ACCOUNT}/token`,
      description: 'Bearer token sent to the API server or kubelet (read again at every request: projected tokens rotate).',
    },
    {
      key: 'ca_file',
      type: 'path',
      default: `${SERVICE_ACCOUNT}/ca.crt`,
      description: "CA bundle the API server's certificate is checked against.",
    },
    {
      key: 'kubelet_ca_file',
      type: 'path',
      default: null,
      example: '/etc/kubernetes/pki/kubelet-ca.crt',
      description: "CA bundle for the kubelet's serving certificate (default: ca_file).",
    },
    {
      key: 'insecure_skip_tls_verify',
      type: 'bool',
      default: false,
      description:
        "Do not check the kubelet's certificate (kubelets with self-signed serving certificates). Never applies to the API server.",
    },
    {
      key: 'labels',
      type: 'list',
      default: [],
      example: 'app.kubernetes.io/name, team',
      description: 'Pod labels put on every GPU point of the pod, as k8s.pod.label.<name>.',
    },
    {
      key: 'refresh_interval',
      type: 'duration',
      default: 5,
      min: 0.1,
      max: 600,
      description:
        'How often the pod-resources API is asked which containers hold which devices (List; within ' +
        "the kubelet's limit of 100 calls/s, burst 10).",
    },
    {
      key: 'metadata_interval',
      type: 'duration',
      default: 60,
      min: 1,
      max: 3600,
      description: 'How often pod metadata is fetched again; a pod not seen before is looked up at once.',
    },
    {
      key: 'request_timeout',
      type: 'duration',
      default: 5,
      min: 0.1,
      max: 120,
      description: 'Longest one pod-resources call or metadata request may take.',
    },
  ],
});

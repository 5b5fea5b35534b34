#!/usr/bin/env python3
"""Writes trainsched's own CustomResourceDefinitions for trainer.kubeflow.org/v1alpha1.

    manifests/crds/generate.py           rewrite the three YAML files next to this script
    manifests/crds/generate.py --check   exit 1 when a file differs from what it would write

The schemas below are ours, written from the Trainer v2.3 API as described in
shared/reference/trainer.md section 1 (TrainJob, TrainingRuntime, ClusterTrainingRuntime) and from
the public Kubernetes and JobSet API types that the Trainer API embeds. Nothing here is copied
from upstream files. The YAML is plain (no anchors) so that kubectl, kustomize and any other
tool read it; the repetition lives here instead.

Deliberate differences from the upstream Trainer v2.3.0 CRDs are listed in HEADER_DIFFERENCES
(they go into each file's header) and in docs/crds.md. tests/e2e/test_crds.c checks that the
two CRD sets accept and reject the same objects, apart from those documented differences.
Only the Python standard library is used.
"""
import json
import os
import re
import sys

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"

# ----------------------------------------------------------------------------- schema helpers


def node(typ, desc=None, **kw):
    n = {"type": typ}
    if desc:
        n["description"] = desc
    n.update(kw)
    return n


def string(desc=None, **kw):
    return node("string", desc, **kw)


def boolean(desc=None, **kw):
    return node("boolean", desc, **kw)


def int32(desc=None, **kw):
    return node("integer", desc, format="int32", **kw)


def int64(desc=None, **kw):
    return node("integer", desc, format="int64", **kw)


def integer(desc=None, **kw):
    return node("integer", desc, **kw)


def date_time(desc=None):
    return node("string", desc, format="date-time")


def obj(props=None, required=None, desc=None, atomic=False, rules=None, **kw):
    n = node("object", desc)
    if props is not None:
        n["properties"] = dict(sorted(props.items()))
    if required:
        n["required"] = sorted(required)
    n.update(kw)
    if atomic:
        n["x-kubernetes-map-type"] = "atomic"
    if rules:
        n["x-kubernetes-validations"] = rules
    return n


def string_map(desc=None, atomic=False):
    n = obj(desc=desc, additionalProperties=string())
    if atomic:
        n["x-kubernetes-map-type"] = "atomic"
    return n


def array(items, desc=None, list_type=None, keys=None, rules=None, **kw):
    n = node("array", desc)
    n["items"] = items
    n.update(kw)
    if list_type:
        n["x-kubernetes-list-type"] = list_type
    if keys:
        n["x-kubernetes-list-map-keys"] = keys
    if rules:
        n["x-kubernetes-validations"] = rules
    return n


def atomic_list(items, desc=None, **kw):
    return array(items, desc, list_type="atomic", **kw)


def map_list(items, keys, desc=None, **kw):
    return array(items, desc, list_type="map", keys=keys, **kw)


def int_or_string(desc=None):
    n = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    if desc:
        n["description"] = desc
    n["x-kubernetes-int-or-string"] = True
    return n


# A resource.Quantity: an integer, or a string in the quantity grammar (decimal or binary SI
# suffix, or a decimal exponent).
QUANTITY_RE = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def quantity(desc=None):
    n = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    if desc:
        n["description"] = desc
    n["pattern"] = QUANTITY_RE
    n["x-kubernetes-int-or-string"] = True
    return n


def quantity_map(desc=None):
    return obj(desc=desc, additionalProperties=quantity())


def rule(expr, message):
    return {"message": message, "rule": expr}


IMMUTABLE = rule("self == oldSelf", "field is immutable")
JOBSET_IMMUTABLE = rule("self == oldSelf", "Value is immutable")


def immutable(n, r=IMMUTABLE):
    n = dict(n)
    n["x-kubernetes-validations"] = list(n.get("x-kubernetes-validations", [])) + [r]
    return n


# ----------------------------------------------------------------------------- core/v1 types
# Written from the public Kubernetes API types (k8s.io/api core/v1 v0.36, the version Trainer
# v2.3 builds with), complete: every field, its type, the fields without omitempty as
# required, list-map keys and the few defaults. There is no x-kubernetes-preserve-unknown-fields
# anywhere, so an unknown or mistyped field inside a pod spec is rejected (fieldValidation=Strict)
# or dropped, as upstream does. A field added by a later Kubernetes release needs a new entry
# here (upstream regenerates its CRDs for that too).


def local_object_reference(atomic=True):
    return obj({"name": string(default="")}, atomic=atomic)


def env_var():
    key_selector = lambda: obj(  # noqa: E731
        {"key": string(), "name": string(default=""), "optional": boolean()},
        required=["key"], atomic=True)
    return obj({
        "name": string(),
        "value": string(),
        "valueFrom": obj({
            "configMapKeyRef": key_selector(),
            "fieldRef": object_field_selector(),
            "fileKeyRef": obj({
                "key": string(),
                "optional": boolean(default=False),
                "path": string(),
                "volumeName": string(),
            }, required=["key", "path", "volumeName"], atomic=True),
            "resourceFieldRef": resource_field_selector(),
            "secretKeyRef": key_selector(),
        }),
    }, required=["name"])


def object_field_selector():
    return obj({"apiVersion": string(), "fieldPath": string()}, required=["fieldPath"],
               atomic=True)


def resource_field_selector():
    return obj({"containerName": string(), "divisor": quantity(), "resource": string()},
               required=["resource"], atomic=True)


def env_list(max_items=None):
    kw = {"maxItems": max_items} if max_items else {}
    return map_list(env_var(), ["name"], **kw)


def env_from_list():
    ref = lambda: obj({"name": string(default=""), "optional": boolean()},  # noqa: E731
                      atomic=True)
    return atomic_list(obj({"configMapRef": ref(), "prefix": string(), "secretRef": ref()}))


def resource_requirements(desc=None):
    return obj({
        "claims": map_list(obj({"name": string(), "request": string()}, required=["name"]),
                           ["name"]),
        "limits": quantity_map(),
        "requests": quantity_map(),
    }, desc=desc)


def volume_mount():
    return obj({
        "mountPath": string(),
        "mountPropagation": string(),
        "name": string(),
        "readOnly": boolean(),
        "recursiveReadOnly": string(),
        "subPath": string(),
        "subPathExpr": string(),
    }, required=["mountPath", "name"])


def se_linux_options():
    return obj({"level": string(), "role": string(), "type": string(), "user": string()})


def profile():  # seccompProfile, appArmorProfile
    return obj({"localhostProfile": string(), "type": string()}, required=["type"])


def windows_options():
    return obj({
        "gmsaCredentialSpec": string(),
        "gmsaCredentialSpecName": string(),
        "hostProcess": boolean(),
        "runAsUserName": string(),
    })


def security_context():
    return obj({
        "allowPrivilegeEscalation": boolean(),
        "appArmorProfile": profile(),
        "capabilities": obj({"add": atomic_list(string()), "drop": atomic_list(string())}),
        "privileged": boolean(),
        "procMount": string(),
        "readOnlyRootFilesystem": boolean(),
        "runAsGroup": int64(),
        "runAsNonRoot": boolean(),
        "runAsUser": int64(),
        "seLinuxOptions": se_linux_options(),
        "seccompProfile": profile(),
        "windowsOptions": windows_options(),
    })


def pod_security_context():
    return obj({
        "appArmorProfile": profile(),
        "fsGroup": int64(),
        "fsGroupChangePolicy": string(),
        "runAsGroup": int64(),
        "runAsNonRoot": boolean(),
        "runAsUser": int64(),
        "seLinuxChangePolicy": string(),
        "seLinuxOptions": se_linux_options(),
        "seccompProfile": profile(),
        "supplementalGroups": atomic_list(int64()),
        "supplementalGroupsPolicy": string(),
        "sysctls": atomic_list(obj({"name": string(), "value": string()},
                                   required=["name", "value"])),
        "windowsOptions": windows_options(),
    })


def label_selector():
    return obj({
        "matchExpressions": atomic_list(obj({
            "key": string(),
            "operator": string(),
            "values": atomic_list(string()),
        }, required=["key", "operator"])),
        "matchLabels": string_map(),
    }, atomic=True)


def node_selector_term():
    req = lambda: atomic_list(obj({  # noqa: E731
        "key": string(),
        "operator": string(),
        "values": atomic_list(string()),
    }, required=["key", "operator"]))
    return obj({"matchExpressions": req(), "matchFields": req()}, atomic=True)


def pod_affinity_term():
    return obj({
        "labelSelector": label_selector(),
        "matchLabelKeys": atomic_list(string()),
        "mismatchLabelKeys": atomic_list(string()),
        "namespaceSelector": label_selector(),
        "namespaces": atomic_list(string()),
        "topologyKey": string(),
    }, required=["topologyKey"])


def pod_affinity():
    return obj({
        "preferredDuringSchedulingIgnoredDuringExecution": atomic_list(obj({
            "podAffinityTerm": pod_affinity_term(),
            "weight": int32(),
        }, required=["podAffinityTerm", "weight"])),
        "requiredDuringSchedulingIgnoredDuringExecution": atomic_list(pod_affinity_term()),
    })


def affinity():
    return obj({
        "nodeAffinity": obj({
            "preferredDuringSchedulingIgnoredDuringExecution": atomic_list(obj({
                "preference": node_selector_term(),
                "weight": int32(),
            }, required=["preference", "weight"])),
            "requiredDuringSchedulingIgnoredDuringExecution": obj({
                "nodeSelectorTerms": atomic_list(node_selector_term()),
            }, required=["nodeSelectorTerms"], atomic=True),
        }),
        "podAffinity": pod_affinity(),
        "podAntiAffinity": pod_affinity(),
    })


def toleration():
    return obj({
        "effect": string(),
        "key": string(),
        "operator": string(),
        "tolerationSeconds": int64(),
        "value": string(),
    })


def key_to_path_list():
    return atomic_list(obj({"key": string(), "mode": int32(), "path": string()},
                           required=["key", "path"]))


def downward_api_files():
    return atomic_list(obj({
        "fieldRef": object_field_selector(),
        "mode": int32(),
        "path": string(),
        "resourceFieldRef": resource_field_selector(),
    }, required=["path"]))


def pvc_spec():
    ref = lambda: {  # noqa: E731
        "apiGroup": string(),
        "kind": string(),
        "name": string(),
    }
    return obj({
        "accessModes": atomic_list(string()),
        "dataSource": obj(ref(), required=["kind", "name"], atomic=True),
        "dataSourceRef": obj(ref() | {"namespace": string()}, required=["kind", "name"]),
        "resources": obj({"limits": quantity_map(), "requests": quantity_map()}),
        "selector": label_selector(),
        "storageClassName": string(),
        "volumeAttributesClassName": string(),
        "volumeMode": string(),
        "volumeName": string(),
    })


def pvc_status():
    return obj({
        "accessModes": atomic_list(string()),
        "allocatedResourceStatuses": obj(additionalProperties=string(),
                                         **{"x-kubernetes-map-type": "granular"}),
        "allocatedResources": quantity_map(),
        "capacity": quantity_map(),
        "conditions": map_list(obj({
            "lastProbeTime": date_time(),
            "lastTransitionTime": date_time(),
            "message": string(),
            "reason": string(),
            "status": string(),
            "type": string(),
        }, required=["status", "type"]), ["type"]),
        "currentVolumeAttributesClassName": string(),
        "modifyVolumeStatus": obj({
            "status": string(),
            "targetVolumeAttributesClassName": string(),
        }, required=["status"]),
        "phase": string(),
    })


def volume_projection():
    return obj({
        "clusterTrustBundle": obj({
            "labelSelector": label_selector(),
            "name": string(),
            "optional": boolean(),
            "path": string(),
            "signerName": string(),
        }, required=["path"]),
        "configMap": obj({
            "items": key_to_path_list(),
            "name": string(default=""),
            "optional": boolean(),
        }, atomic=True),
        "downwardAPI": obj({"items": downward_api_files()}),
        "podCertificate": obj({
            "certificateChainPath": string(),
            "credentialBundlePath": string(),
            "keyPath": string(),
            "keyType": string(),
            "maxExpirationSeconds": int32(),
            "signerName": string(),
            "userAnnotations": string_map(),
        }, required=["keyType", "signerName"]),
        "secret": obj({
            "items": key_to_path_list(),
            "name": string(default=""),
            "optional": boolean(),
        }, atomic=True),
        "serviceAccountToken": obj({
            "audience": string(),
            "expirationSeconds": int64(),
            "path": string(),
        }, required=["path"]),
    })


def volume():
    """Volume with every volume source of core/v1 (the deprecated in-tree ones included)."""
    secret_ref = local_object_reference
    return obj({
        "awsElasticBlockStore": obj({
            "fsType": string(),
            "partition": int32(),
            "readOnly": boolean(),
            "volumeID": string(),
        }, required=["volumeID"]),
        "azureDisk": obj({
            "cachingMode": string(),
            "diskName": string(),
            "diskURI": string(),
            "fsType": string(default="ext4"),
            "kind": string(),
            "readOnly": boolean(default=False),
        }, required=["diskName", "diskURI"]),
        "azureFile": obj({
            "readOnly": boolean(),
            "secretName": string(),
            "shareName": string(),
        }, required=["secretName", "shareName"]),
        "cephfs": obj({
            "monitors": atomic_list(string()),
            "path": string(),
            "readOnly": boolean(),
            "secretFile": string(),
            "secretRef": secret_ref(),
            "user": string(),
        }, required=["monitors"]),
        "cinder": obj({
            "fsType": string(),
            "readOnly": boolean(),
            "secretRef": secret_ref(),
            "volumeID": string(),
        }, required=["volumeID"]),
        "configMap": obj({
            "defaultMode": int32(),
            "items": key_to_path_list(),
            "name": string(default=""),
            "optional": boolean(),
        }, atomic=True),
        "csi": obj({
            "driver": string(),
            "fsType": string(),
            "nodePublishSecretRef": secret_ref(),
            "readOnly": boolean(),
            "volumeAttributes": string_map(),
        }, required=["driver"]),
        "downwardAPI": obj({"defaultMode": int32(), "items": downward_api_files()}),
        "emptyDir": obj({"medium": string(), "sizeLimit": quantity()}),
        "ephemeral": obj({
            "volumeClaimTemplate": obj({
                "metadata": embedded_meta(),
                "spec": pvc_spec(),
            }, required=["spec"]),
        }),
        "fc": obj({
            "fsType": string(),
            "lun": int32(),
            "readOnly": boolean(),
            "targetWWNs": atomic_list(string()),
            "wwids": atomic_list(string()),
        }),
        "flexVolume": obj({
            "driver": string(),
            "fsType": string(),
            "options": string_map(),
            "readOnly": boolean(),
            "secretRef": secret_ref(),
        }, required=["driver"]),
        "flocker": obj({"datasetName": string(), "datasetUUID": string()}),
        "gcePersistentDisk": obj({
            "fsType": string(),
            "partition": int32(),
            "pdName": string(),
            "readOnly": boolean(),
        }, required=["pdName"]),
        "gitRepo": obj({
            "directory": string(),
            "repository": string(),
            "revision": string(),
        }, required=["repository"]),
        "glusterfs": obj({
            "endpoints": string(),
            "path": string(),
            "readOnly": boolean(),
        }, required=["endpoints", "path"]),
        "hostPath": obj({"path": string(), "type": string()}, required=["path"]),
        "image": obj({"pullPolicy": string(), "reference": string()}),
        "iscsi": obj({
            "chapAuthDiscovery": boolean(),
            "chapAuthSession": boolean(),
            "fsType": string(),
            "initiatorName": string(),
            "iqn": string(),
            "iscsiInterface": string(default="default"),
            "lun": int32(),
            "portals": atomic_list(string()),
            "readOnly": boolean(),
            "secretRef": secret_ref(),
            "targetPortal": string(),
        }, required=["iqn", "lun", "targetPortal"]),
        "name": string(),
        "nfs": obj({"path": string(), "readOnly": boolean(), "server": string()},
                   required=["path", "server"]),
        "persistentVolumeClaim": obj({"claimName": string(), "readOnly": boolean()},
                                     required=["claimName"]),
        "photonPersistentDisk": obj({"fsType": string(), "pdID": string()}, required=["pdID"]),
        "portworxVolume": obj({
            "fsType": string(),
            "readOnly": boolean(),
            "volumeID": string(),
        }, required=["volumeID"]),
        "projected": obj({
            "defaultMode": int32(),
            "sources": atomic_list(volume_projection()),
        }),
        "quobyte": obj({
            "group": string(),
            "readOnly": boolean(),
            "registry": string(),
            "tenant": string(),
            "user": string(),
            "volume": string(),
        }, required=["registry", "volume"]),
        "rbd": obj({
            "fsType": string(),
            "image": string(),
            "keyring": string(default="/etc/ceph/keyring"),
            "monitors": atomic_list(string()),
            "pool": string(default="rbd"),
            "readOnly": boolean(),
            "secretRef": secret_ref(),
            "user": string(default="admin"),
        }, required=["image", "monitors"]),
        "scaleIO": obj({
            "fsType": string(default="xfs"),
            "gateway": string(),
            "protectionDomain": string(),
            "readOnly": boolean(),
            "secretRef": secret_ref(),
            "sslEnabled": boolean(),
            "storageMode": string(default="ThinProvisioned"),
            "storagePool": string(),
            "system": string(),
            "volumeName": string(),
        }, required=["gateway", "secretRef", "system"]),
        "secret": obj({
            "defaultMode": int32(),
            "items": key_to_path_list(),
            "optional": boolean(),
            "secretName": string(),
        }),
        "storageos": obj({
            "fsType": string(),
            "readOnly": boolean(),
            "secretRef": secret_ref(),
            "volumeName": string(),
            "volumeNamespace": string(),
        }),
        "vsphereVolume": obj({
            "fsType": string(),
            "storagePolicyID": string(),
            "storagePolicyName": string(),
            "volumePath": string(),
        }, required=["volumePath"]),
    }, required=["name"])


def volume_list(**kw):
    return map_list(volume(), ["name"], **kw)


def http_get():
    return obj({
        "host": string(),
        "httpHeaders": atomic_list(obj({"name": string(), "value": string()},
                                       required=["name", "value"])),
        "path": string(),
        "port": int_or_string(),
        "scheme": string(),
    }, required=["port"])


def tcp_socket():
    return obj({"host": string(), "port": int_or_string()}, required=["port"])


def exec_action():
    return obj({"command": atomic_list(string())})


def probe():
    return obj({
        "exec": exec_action(),
        "failureThreshold": int32(),
        "grpc": obj({"port": int32(), "service": string(default="")}, required=["port"]),
        "httpGet": http_get(),
        "initialDelaySeconds": int32(),
        "periodSeconds": int32(),
        "successThreshold": int32(),
        "tcpSocket": tcp_socket(),
        "terminationGracePeriodSeconds": int64(),
        "timeoutSeconds": int32(),
    })


def lifecycle():
    handler = lambda: obj({  # noqa: E731
        "exec": exec_action(),
        "httpGet": http_get(),
        "sleep": obj({"seconds": int64()}, required=["seconds"]),
        "tcpSocket": tcp_socket(),
    })
    return obj({"postStart": handler(), "preStop": handler(), "stopSignal": string()})


def container(ephemeral=False):
    """Container (or, with ephemeral, EphemeralContainer)."""
    extra = {"targetContainerName": string()} if ephemeral else {}
    return obj(extra | {
        "args": atomic_list(string()),
        "command": atomic_list(string()),
        "env": env_list(),
        "envFrom": env_from_list(),
        "image": string(),
        "imagePullPolicy": string(),
        "lifecycle": lifecycle(),
        "livenessProbe": probe(),
        "name": string(),
        "ports": map_list(obj({
            "containerPort": int32(),
            "hostIP": string(),
            "hostPort": int32(),
            "name": string(),
            "protocol": string(default="TCP"),
        }, required=["containerPort"]), ["containerPort", "protocol"]),
        "readinessProbe": probe(),
        "resizePolicy": atomic_list(obj({"resourceName": string(), "restartPolicy": string()},
                                        required=["resourceName", "restartPolicy"])),
        "resources": resource_requirements(),
        "restartPolicy": string(),
        "restartPolicyRules": atomic_list(obj({
            "action": string(),
            "exitCodes": obj({
                "operator": string(),
                "values": array(int32(), list_type="set"),
            }, required=["operator"]),
        }, required=["action"])),
        "securityContext": security_context(),
        "startupProbe": probe(),
        "stdin": boolean(),
        "stdinOnce": boolean(),
        "terminationMessagePath": string(),
        "terminationMessagePolicy": string(),
        "tty": boolean(),
        "volumeDevices": map_list(obj({"devicePath": string(), "name": string()},
                                      required=["devicePath", "name"]), ["devicePath"]),
        "volumeMounts": map_list(volume_mount(), ["mountPath"]),
        "workingDir": string(),
    }, required=["name"])


def pod_spec():
    """PodSpec of a runtime's Job template."""
    return obj({
        "activeDeadlineSeconds": int64(),
        "affinity": affinity(),
        "automountServiceAccountToken": boolean(),
        "containers": map_list(container(), ["name"]),
        "dnsConfig": obj({
            "nameservers": atomic_list(string()),
            "options": atomic_list(obj({"name": string(), "value": string()})),
            "searches": atomic_list(string()),
        }),
        "dnsPolicy": string(),
        "enableServiceLinks": boolean(),
        "ephemeralContainers": map_list(container(ephemeral=True), ["name"]),
        "hostAliases": map_list(obj({"hostnames": atomic_list(string()), "ip": string()},
                                    required=["ip"]), ["ip"]),
        "hostIPC": boolean(),
        "hostNetwork": boolean(),
        "hostPID": boolean(),
        "hostUsers": boolean(),
        "hostname": string(),
        "hostnameOverride": string(),
        "imagePullSecrets": map_list(local_object_reference(), ["name"]),
        "initContainers": map_list(container(), ["name"]),
        "nodeName": string(),
        "nodeSelector": string_map(atomic=True),
        "os": obj({"name": string()}, required=["name"]),
        "overhead": quantity_map(),
        "preemptionPolicy": string(),
        "priority": int32(),
        "priorityClassName": string(),
        "readinessGates": atomic_list(obj({"conditionType": string()},
                                          required=["conditionType"])),
        "resourceClaims": map_list(obj({
            "name": string(),
            "resourceClaimName": string(),
            "resourceClaimTemplateName": string(),
        }, required=["name"]), ["name"]),
        "resources": resource_requirements(),
        "restartPolicy": string(),
        "runtimeClassName": string(),
        "schedulerName": string(),
        "schedulingGates": map_list(obj({"name": string()}, required=["name"]), ["name"]),
        "schedulingGroup": obj({"podGroupName": string()}),
        "securityContext": pod_security_context(),
        "serviceAccount": string(),
        "serviceAccountName": string(),
        "setHostnameAsFQDN": boolean(),
        "shareProcessNamespace": boolean(),
        "subdomain": string(),
        "terminationGracePeriodSeconds": int64(),
        "tolerations": atomic_list(toleration()),
        "topologySpreadConstraints": map_list(obj({
            "labelSelector": label_selector(),
            "matchLabelKeys": atomic_list(string()),
            "maxSkew": int32(),
            "minDomains": int32(),
            "nodeAffinityPolicy": string(),
            "nodeTaintsPolicy": string(),
            "topologyKey": string(),
            "whenUnsatisfiable": string(),
        }, required=["maxSkew", "topologyKey", "whenUnsatisfiable"]),
            ["topologyKey", "whenUnsatisfiable"]),
        "volumes": volume_list(),
    }, required=["containers"])


def embedded_meta(desc=None):
    """ObjectMeta inside a template: the fields a template may carry."""
    return obj({
        "annotations": string_map(),
        "finalizers": array(string()),
        "labels": string_map(),
        "name": string(),
        "namespace": string(),
    }, desc=desc)


# ----------------------------------------------------------------------------- JobSet (v0.12)
# Written from the jobset.x-k8s.io/v1alpha2 API (JobSetSpec of sigs.k8s.io/jobset v0.12.0),
# with JobSet's own CEL rules.


def job_spec():
    return obj({
        "activeDeadlineSeconds": int64(),
        "backoffLimit": int32(),
        "backoffLimitPerIndex": int32(),
        "completionMode": string(),
        "completions": int32(),
        "managedBy": string(),
        "manualSelector": boolean(),
        "maxFailedIndexes": int32(),
        "parallelism": int32(),
        "podFailurePolicy": obj({
            "rules": atomic_list(obj({
                "action": string(),
                "onExitCodes": obj({
                    "containerName": string(),
                    "operator": string(),
                    "values": array(int32(), list_type="set"),
                }, required=["operator", "values"]),
                "onPodConditions": atomic_list(obj({"status": string(), "type": string()},
                                                   required=["type"])),
            }, required=["action"])),
        }, required=["rules"]),
        "podReplacementPolicy": string(),
        "selector": label_selector(),
        "successPolicy": obj({
            "rules": atomic_list(obj({"succeededCount": int32(),
                                      "succeededIndexes": string()})),
        }, required=["rules"]),
        "suspend": boolean(),
        "template": obj({"metadata": embedded_meta(), "spec": pod_spec()}),
        "ttlSecondsAfterFinished": int32(),
    }, required=["template"])


def pvc_template():
    return obj({
        "apiVersion": string(),
        "kind": string(),
        "metadata": embedded_meta(),
        "spec": pvc_spec(),
        "status": pvc_status(),
    })


def jobset_spec():
    return obj({
        "coordinator": obj({
            "jobIndex": integer(),
            "podIndex": integer(),
            "replicatedJob": string(),
        }, required=["replicatedJob"]),
        "failurePolicy": obj({
            "maxRestarts": int32(),
            "restartStrategy": string(default="Recreate",
                                      enum=["Recreate", "BlockingRecreate", "InPlaceRestart"]),
            "rules": array(obj({
                "action": string(enum=["FailJobSet", "RestartJobSet",
                                       "RestartJobSetAndIgnoreMaxRestarts", "RestartJob",
                                       "RestartJobAndIgnoreMaxRestarts"]),
                "name": string(),
                "onJobFailureMessagePatterns": array(string()),
                "onJobFailureReasons": array(string()),
                "targetReplicatedJobs": atomic_list(string()),
            }, required=["action", "name"])),
        }, rules=[JOBSET_IMMUTABLE]),
        "managedBy": string(),
        "network": obj({
            "enableDNSHostnames": boolean(),
            "publishNotReadyAddresses": boolean(),
            "subdomain": string(),
        }, rules=[JOBSET_IMMUTABLE]),
        "replicatedJobs": map_list(obj({
            "dependsOn": map_list(obj({
                "name": string(),
                "status": string(enum=["Ready", "Complete"]),
            }, required=["name", "status"]), ["name"], maxItems=5, rules=[JOBSET_IMMUTABLE]),
            "groupName": string(default="default"),
            "name": string(),
            "replicas": int32(default=1),
            "template": obj({"metadata": embedded_meta(), "spec": job_spec()}),
        }, required=["name", "template"]), ["name"]),
        "startupPolicy": obj({
            "startupPolicyOrder": string(enum=["AnyOrder", "InOrder"]),
        }, required=["startupPolicyOrder"], rules=[JOBSET_IMMUTABLE]),
        "successPolicy": obj({
            "operator": string(enum=["All", "Any"]),
            "targetReplicatedJobs": atomic_list(string()),
        }, required=["operator"], rules=[JOBSET_IMMUTABLE]),
        "suspend": boolean(),
        "ttlSecondsAfterFinished": int32(minimum=0),
        "volumeClaimPolicies": atomic_list(obj({
            "retentionPolicy": obj({
                "whenDeleted": string(default="Delete", enum=["Delete", "Retain"]),
            }),
            "templates": atomic_list(pvc_template(), maxItems=50),
        }, rules=[rule("self.templates.all(t, !has(t.metadata.namespace) || "
                       "size(t.metadata.namespace) == 0)",
                       "namespace cannot be set for VolumeClaimPolicies templates")]),
            maxItems=50, rules=[JOBSET_IMMUTABLE]),
    }, rules=[rule(
        "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
        "self.replicatedJobs.exists(rj, has(rj.dependsOn)))",
        "StartupPolicy and DependsOn APIs are mutually exclusive")])


# ----------------------------------------------------------------------------- Trainer types

NAME_253 = dict(minLength=1, maxLength=253)


def initializer_source(what):
    return obj({
        "env": env_list(128) | {"description": f"Extra environment of the {what} initializer "
                                               "container (a map keyed by name)."},
        "secretRef": local_object_reference() | {
            "description": f"Secret in the TrainJob's namespace, mounted as environment "
                           f"(envFrom) into the {what} initializer container."},
        "storageUri": string(
            f"Where the {what} comes from, as scheme://path; empty means none.", maxLength=2048,
            **{"x-kubernetes-validations": [rule(
                "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
                "storageUri must be empty or a URI of the form scheme://path")]}),
    }, desc=f"Configuration of the {what} initializer.")


def container_patch(desc):
    return obj({
        "env": env_list(128) | {
            "description": "Environment to add; not allowed (webhook) for the containers named "
                           "node, dataset-initializer and model-initializer."},
        "name": string("Name of a container of the runtime job.", **NAME_253),
        "securityContext": security_context(),
        "volumeMounts": map_list(volume_mount(), ["name"], maxItems=128),
    }, required=["name"], desc=desc)


def pod_spec_patch():
    return obj({
        "affinity": affinity(),
        "containers": immutable(map_list(container_patch("Patch of one container."), ["name"],
                                         maxItems=64)),
        "imagePullSecrets": immutable(map_list(local_object_reference(), ["name"],
                                               maxItems=64)),
        "initContainers": immutable(map_list(container_patch("Patch of one init container."),
                                             ["name"], maxItems=64)),
        "nodeSelector": string_map(),
        "schedulingGates": map_list(obj({"name": string()}, required=["name"]), ["name"],
                                    maxItems=16),
        "securityContext": immutable(pod_security_context()),
        "serviceAccountName": immutable(string(maxLength=253)),
        "terminationGracePeriodSeconds": immutable(int64(minimum=0)),
        "tolerations": atomic_list(toleration(), maxItems=128),
        "volumes": immutable(volume_list(maxItems=128)),
    }, desc="Fields of the pod spec a manager may patch. nodeSelector, affinity, tolerations "
            "and schedulingGates may change; the others are immutable.")


def runtime_patch():
    return obj({
        "manager": immutable(string(
            "Who owns this patch, as a domain-prefixed path (e.g. kueue.x-k8s.io/manager).",
            **NAME_253)),
        "time": date_time("When the patch was last changed (set by the webhook)."),
        "trainingRuntimeSpec": obj({
            "template": obj({
                "metadata": embedded_meta("Labels and annotations for the JobSet."),
                "spec": obj({
                    "replicatedJobs": map_list(obj({
                        "name": string("Name of a replicated job of the runtime.", **NAME_253),
                        "template": obj({
                            "metadata": embedded_meta("Labels and annotations for the Job."),
                            "spec": obj({
                                "template": obj({
                                    "metadata": embedded_meta(
                                        "Labels and annotations for the pods."),
                                    "spec": pod_spec_patch(),
                                }),
                            }),
                        }),
                    }, required=["name"]), ["name"], maxItems=100),
                }),
            }),
        }, desc="Patch of the runtime's JobSet template."),
    }, required=["manager"])


def trainjob_spec():
    return obj({
        "activeDeadlineSeconds": immutable(int64(
            "Seconds the TrainJob may run (from creation or the last resume) before it fails.",
            minimum=1)),
        "initializer": immutable(obj({
            "dataset": initializer_source("dataset"),
            "model": initializer_source("model"),
        }, desc="Dataset and model initializers.")),
        "managedBy": string(
            "The controller that reconciles this TrainJob.",
            default="trainer.kubeflow.org/trainjob-controller", maxLength=253,
            **{"x-kubernetes-validations": [
                rule("self in ['trainer.kubeflow.org/trainjob-controller', "
                     "'kueue.x-k8s.io/multikueue']",
                     "managedBy must be trainer.kubeflow.org/trainjob-controller or "
                     "kueue.x-k8s.io/multikueue"),
                IMMUTABLE]}),
        "runtimePatches": map_list(runtime_patch(), ["manager"], maxItems=16,
                                   description="Patches to the runtime, one per manager."),
        "runtimeRef": immutable(obj({
            "apiGroup": string(default=GROUP, maxLength=253),
            "kind": string("TrainingRuntime or ClusterTrainingRuntime.",
                           default="ClusterTrainingRuntime", maxLength=253),
            "name": string("Name of the runtime.", **NAME_253),
        }, required=["name"], desc="The runtime this TrainJob uses.")),
        "suspend": boolean("Whether the TrainJob is suspended.", default=False),
        "trainer": immutable(obj({
            "args": atomic_list(string(maxLength=1048576), maxItems=128),
            "command": atomic_list(string(maxLength=1048576), maxItems=128),
            "env": env_list(128),
            "image": string("Image of the trainer container.", maxLength=500),
            "numNodes": int32("Number of training nodes (pods).", minimum=0),
            "numProcPerNode": int32(
                "Processes per node; unset means the framework decides (torch: auto).",
                **{"x-kubernetes-validations": [rule(
                    "self >= 1", "numProcPerNode must be greater than or equal to 1")]}),
            "resourcesPerNode": resource_requirements(
                "Resources of each trainer node's main container."),
        }, desc="Overrides of the runtime's trainer step.")),
    }, required=["runtimeRef"], desc="Desired state of the TrainJob.")


def condition():
    return obj({
        "lastTransitionTime": date_time(),
        "message": string(maxLength=32768),
        "observedGeneration": int64(minimum=0),
        "reason": string(maxLength=1024, minLength=1,
                         pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        "status": string(enum=["True", "False", "Unknown"]),
        "type": string(maxLength=316, pattern=(
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")),
    }, required=["lastTransitionTime", "message", "reason", "status", "type"])


def trainjob_status():
    count = lambda: int32(minimum=0)  # noqa: E731
    return obj({
        "conditions": map_list(condition(), ["type"], maxItems=8,
                               description="Suspended, Complete, Failed."),
        "jobsStatus": map_list(obj({
            "active": count(),
            "failed": count(),
            "name": string(**NAME_253),
            "ready": count(),
            "succeeded": count(),
            "suspended": count(),
        }, required=["active", "failed", "name", "ready", "succeeded", "suspended"]), ["name"],
            maxItems=100, description="Child Job counts per replicated job of the JobSet."),
        "trainerStatus": obj({
            "estimatedRemainingSeconds": int32(minimum=0),
            "lastUpdatedTime": date_time(),
            "metrics": atomic_list(obj({
                "name": string(minLength=1, maxLength=64),
                "value": string(minLength=1, maxLength=64),
            }, required=["name", "value"]), maxItems=256),
            "progressPercentage": int32(minimum=0, maximum=100),
        }, desc="Progress reported by the trainer (alpha).", rules=[rule(
            "has(self.lastUpdatedTime)",
            "lastUpdatedTime is required when trainerStatus is present")]),
    }, desc="Observed state of the TrainJob.", minProperties=1)


def trainjob_schema():
    return obj({
        "apiVersion": string(),
        "kind": string(),
        "metadata": obj(),
        "spec": trainjob_spec(),
        "status": trainjob_status(),
    }, desc="A training job: a runtime plus the trainer, data and model to use.", rules=[
        rule("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
             "metadata.name must match RFC 1035 DNS label format"),
        rule("size(self.metadata.name) <= 63",
             "metadata.name must be no more than 63 characters"),
    ])


def ml_policy():
    num_proc = lambda what: int32(  # noqa: E731
        "Processes (slots) per node.", default=1,
        **{"x-kubernetes-validations": [rule("self >= 1",
                                             f"NumProcPerNode in {what} must be >= 1")]})
    return obj({
        "flux": obj({"numProcPerNode": num_proc("fluxPolicy")}, desc="Flux framework."),
        "jax": obj(desc="JAX distributed."),
        "mpi": obj({
            "mpiImplementation": string(default="OpenMPI", enum=["OpenMPI", ""]),
            "numProcPerNode": num_proc("mpiPolicy"),
            "runLauncherAsNode": boolean("The launcher pod is also a training node.",
                                         default=False),
            "sshAuthMountPath": string(default="/root/.ssh", maxLength=4096),
        }, desc="MPI (OpenMPI)."),
        "numNodes": int32("Default number of training nodes."),
        "torch": obj({
            "envInjection": obj({
                "targets": map_list(obj({
                    "containerNames": array(
                        string(maxLength=63), list_type="set", minItems=1, maxItems=8,
                        rules=[rule("!self.exists(c, c == 'node')",
                                    "containerNames must not include node: the PET_* "
                                    "variables always go to the node container")]),
                    "jobName": string(**NAME_253),
                }, required=["containerNames", "jobName"]), ["jobName"], maxItems=16),
            }, desc="Other containers that also get the PET_* variables."),
        }, desc="PyTorch (torchrun)."),
        "xgboost": obj(desc="XGBoost."),
    }, desc="The ML framework policy; at most one framework.", rules=[rule(
        "(has(self.torch) ? 1 : 0) + (has(self.mpi) ? 1 : 0) + (has(self.jax) ? 1 : 0) + "
        "(has(self.xgboost) ? 1 : 0) + (has(self.flux) ? 1 : 0) <= 1",
        "Only one of the policy can be configured")])


def runtime_spec():
    return obj({
        "mlPolicy": ml_policy(),
        "podGroupPolicy": obj({
            "coscheduling": obj({
                "scheduleTimeoutSeconds": int32(default=60),
            }, desc="scheduler-plugins coscheduling PodGroup."),
            "volcano": obj({
                "networkTopology": obj({
                    "highestTierAllowed": integer(default=1),
                    "mode": string(default="hard", enum=["hard", "soft"]),
                }),
            }, desc="Volcano PodGroup."),
        }, desc="Gang scheduling (one of coscheduling, volcano)."),
        "template": obj({
            "metadata": embedded_meta("Labels and annotations for the JobSet."),
            "spec": jobset_spec(),
        }, desc="The JobSet template (jobset.x-k8s.io/v1alpha2 JobSetSpec).", minProperties=1),
    }, desc="The runtime: ML policy, gang policy and JobSet template.", minProperties=1)


def runtime_schema(kind):
    return obj({
        "apiVersion": string(),
        "kind": string(),
        "metadata": obj(),
        "spec": runtime_spec(),
    }, desc=f"A {'cluster-wide' if kind.startswith('Cluster') else 'namespaced'} training "
            "runtime: the blueprint TrainJobs refer to.")


# ----------------------------------------------------------------------------- CRDs

HEADER_DIFFERENCES = """\
Compared with the upstream Trainer v2.3.0 CRDs, on purpose:
- The lower bounds that Trainer added after v2.3.0 (kubeflow/trainer#3809) are included:
  TrainJob spec.trainer.numNodes >= 0 and spec.trainer.numProcPerNode >= 1, runtime
  spec.mlPolicy.mpi.numProcPerNode >= 1. Upstream v2.3.0 accepts 0 / -1 there.
- Embedded Kubernetes and JobSet types (PodSpec, Container, Volume, Affinity, PVC templates,
  JobSetSpec, ...) are typed in full, with no x-kubernetes-preserve-unknown-fields, so they
  accept, reject and default exactly what upstream does; descriptions are left out there.
  That keeps each file small enough for client-side kubectl apply (upstream's need
  server-side apply).
- Our own short descriptions on the Trainer fields; CEL rules written by us (same meaning);
  messages as the Trainer API reference gives them, or in our words where it only gives a
  gist. Field paths, types and HTTP answers are the same.
- The CRDs carry the label app.kubernetes.io/part-of: trainsched.
"""


def crd(kind, plural, scope, schema, status=False, columns=None, name_for_header=""):
    version = {
        "name": VERSION,
        "served": True,
        "storage": True,
    }
    if columns:
        version["additionalPrinterColumns"] = columns
    version["schema"] = {"openAPIV3Schema": schema}
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "trainsched"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": kind + "List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "scope": scope,
            "versions": [version],
        },
    }


def header(kind, plural):
    lines = [
        f"{plural}.{GROUP} ({kind}, {VERSION}): trainsched's own CRD.",
        "",
        "Written by the trainsched authors from the Kubeflow Trainer v2.3 API (TrainJob,",
        "TrainingRuntime, ClusterTrainingRuntime as described in the Trainer API reference) and the",
        "public Kubernetes and JobSet v0.12 API types it embeds; not copied from upstream files.",
        "Generated by manifests/crds/generate.py: edit that script, then run it.",
        "Install: kubectl apply -f manifests/crds/  (client- or server-side; see docs/crds.md)",
        "",
    ] + HEADER_DIFFERENCES.rstrip("\n").split("\n") + [
        "",
        "tests/e2e/test_crds.c checks that these CRDs and the upstream ones accept and reject the",
        "same objects (tests/fixtures/crds/), apart from the differences above.",
    ]
    return "".join(f"# {l}".rstrip() + "\n" for l in lines)


def all_crds():
    return [
        ("trainer.kubeflow.org_trainjobs.yaml", "TrainJob", "trainjobs",
         crd("TrainJob", "trainjobs", "Namespaced", trainjob_schema(), status=True, columns=[
             # Trainer's two columns, then what tells a failing condition from a good one:
             # STATE alone shows the type of the last condition, which reads the same for
             # ResourcesCreated=True and =False.
             {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
             {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
             {"jsonPath": ".status.conditions[-1:].status", "name": "Status", "type": "string",
              "description": "status of the last condition (True, False, Unknown)"},
             {"jsonPath": ".status.conditions[-1:].reason", "name": "Reason", "type": "string",
              "description": "reason of the last condition"},
             {"jsonPath": ".status.conditions[-1:].message", "name": "Message", "type": "string",
              "priority": 1, "description": "message of the last condition (-o wide)"},
         ])),
        ("trainer.kubeflow.org_trainingruntimes.yaml", "TrainingRuntime", "trainingruntimes",
         crd("TrainingRuntime", "trainingruntimes", "Namespaced",
             runtime_schema("TrainingRuntime"))),
        ("trainer.kubeflow.org_clustertrainingruntimes.yaml", "ClusterTrainingRuntime",
         "clustertrainingruntimes",
         crd("ClusterTrainingRuntime", "clustertrainingruntimes", "Cluster",
             runtime_schema("ClusterTrainingRuntime"))),
    ]


# ----------------------------------------------------------------------------- YAML writer
# Block style, 2-space indent, list items not indented under their key (as kubectl prints).

PLAIN_RE = re.compile(r"^[A-Za-z_/$][A-Za-z0-9_./$-]*$")
YAML11_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def scalar(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    if PLAIN_RE.match(s) and s.lower() not in YAML11_WORDS:
        return s
    if "'" not in s and "\n" not in s and "\\" not in s:
        return "'" + s + "'"
    return json.dumps(s, ensure_ascii=False)


def emit(v, indent, out):
    pad = " " * indent
    if isinstance(v, dict):
        for k, x in v.items():
            key = scalar(k)
            if isinstance(x, dict) and x:
                out.append(f"{pad}{key}:\n")
                emit(x, indent + 2, out)
            elif isinstance(x, list) and x:
                out.append(f"{pad}{key}:\n")
                emit(x, indent, out)
            else:
                out.append(f"{pad}{key}: {inline(x)}\n")
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, dict) and x:
                sub = []
                emit(x, indent + 2, sub)
                sub[0] = pad + "- " + sub[0][indent + 2:]
                out.extend(sub)
            elif isinstance(x, list) and x:
                raise ValueError("nested lists are not used")
            else:
                out.append(f"{pad}- {inline(x)}\n")


def inline(x):
    if isinstance(x, dict):
        return "{}"
    if isinstance(x, list):
        return "[]"
    return scalar(x)


def render(kind, plural, doc):
    out = [header(kind, plural), "---\n"]
    emit(doc, 0, out)
    return "".join(out)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    check = "--check" in argv[1:]
    stale = 0
    for fname, kind, plural, doc in all_crds():
        path = os.path.join(here, fname)
        text = render(kind, plural, doc)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    same = f.read() == text
            except FileNotFoundError:
                same = False
            if not same:
                print(f"{path}: out of date (run {argv[0]})", file=sys.stderr)
                stale += 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {path} ({len(text)} bytes)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

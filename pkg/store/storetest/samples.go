package storetest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-catalog/kubectl-catalog/pkg/apis/catalog/v1alpha1"
)

// Sample names and ids, shared by the sample records.
const (
	CatalogNamespace = "catalog-system"
	UserNamespace    = "dev"
	BrokerName       = "acme"
	ClassID          = "4f6e6cf6-ffdd-425f-a2c7-3c9258ad2468"
	PlanID           = "86064792-7ea2-467b-af93-ac9694d96d52"
	InstanceID       = "c8b6a1d2-51f0-4f39-9d5e-0a5e0d0b7f11"
	BindingID        = "0f7b9a3e-2c51-4b8e-9f2d-6a1c3e5b7d90"
)

// SampleTime is the time used throughout the samples.
func SampleTime() metav1.Time {
	return metav1.NewTime(time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC))
}

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(SampleTime().Add(d))
	return &t
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// SampleBroker is a cluster-scoped broker with every field set.
func SampleBroker() *v1alpha1.Broker {
	return &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Name: BrokerName, Namespace: CatalogNamespace, Labels: map[string]string{"team": "platform"}},
		Spec: v1alpha1.BrokerSpec{
			URL:   "https://broker.acme.example/osb",
			Scope: v1alpha1.ScopeCluster,
			Auth: &v1alpha1.BrokerAuth{
				Type: v1alpha1.AuthBasic, SecretRef: v1alpha1.SecretReference{Name: "acme-broker-auth"},
			},
			CABundle:              "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUYz\n-----END CERTIFICATE-----\n",
			InsecureSkipTLSVerify: true,
			RelistInterval:        &metav1.Duration{Duration: 15 * time.Minute},
			RelistRequests:        2,
			CatalogRestrictions: &v1alpha1.CatalogRestrictions{
				ServiceClass: []string{"name in (postgres, redis)"},
				ServicePlan:  []string{"spec.free==true"},
			},
		},
		Status: v1alpha1.BrokerStatus{
			Conditions: []metav1.Condition{{
				Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1,
				LastTransitionTime: SampleTime(), Reason: "CatalogFetched", Message: "2 classes, 5 plans",
			}},
			ObservedGeneration: 1,
			LastCatalogFetch:   at(0),
			LastCatalogError:   "Get \"https://broker.acme.example/osb/v2/catalog\": dial tcp: connection refused",
			ClassCount:         2,
			PlanCount:          5,
			NextRelistAt:       at(15 * time.Minute),
			Retry: &v1alpha1.RetryState{
				Attempts: 3, Reason: "CatalogFetchFailed", LastError: "connection refused",
				LastAttemptAt: at(time.Minute), NextRetryAt: at(2 * time.Minute),
			},
		},
	}
}

// SampleClass is a class of SampleBroker with two plans, one removed from the broker.
func SampleClass() *v1alpha1.ServiceClass {
	return &v1alpha1.ServiceClass{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClassRecordName(BrokerName, ClassID), Namespace: CatalogNamespace},
		Spec: v1alpha1.ServiceClassSpec{
			BrokerName:           BrokerName,
			Scope:                v1alpha1.ScopeCluster,
			ID:                   ClassID,
			ExternalName:         "postgres",
			Description:          "PostgreSQL & friends <managed>",
			Tags:                 []string{"sql", "database"},
			Requires:             []string{"syslog_drain"},
			Bindable:             true,
			InstancesRetrievable: true,
			BindingsRetrievable:  true,
			AllowContextUpdates:  true,
			PlanUpdateable:       true,
			Metadata:             raw(`{"displayName":"PostgreSQL","imageUrl":"https://acme.example/pg.png"}`),
			Plans: []v1alpha1.ServicePlan{
				{
					ID: PlanID, ExternalName: "small", Description: "1 vCPU, 2 GiB", Free: false,
					Bindable: ptr.To(true), PlanUpdateable: ptr.To(false), BindingRotatable: true,
					MaximumPollingDuration: &metav1.Duration{Duration: time.Hour},
					MaintenanceInfo:        &v1alpha1.MaintenanceInfo{Version: "2.1.0", Description: "OS patches"},
					Metadata: &v1alpha1.PlanMetadata{
						DisplayName: "Small",
						Bullets:     []string{"daily backups", "99.9% uptime"},
						Costs:       []v1alpha1.PlanCost{{Amount: map[string]float64{"usd": 29.5, "eur": 27}, Unit: "MONTHLY"}},
					},
				},
				{ID: "0c5e2f5a-legacy", ExternalName: "legacy", Free: true},
			},
		},
		Status: v1alpha1.ServiceClassStatus{
			Plans: []v1alpha1.ServicePlanStatus{{ID: "0c5e2f5a-legacy", RemovedFromBroker: true}},
		},
	}
}

// SamplePlanSchemas holds the schemas of SampleClass's plans.
func SamplePlanSchemas() *v1alpha1.ServicePlanSchemas {
	return &v1alpha1.ServicePlanSchemas{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClassRecordName(BrokerName, ClassID), Namespace: CatalogNamespace},
		Spec: v1alpha1.ServicePlanSchemasSpec{
			BrokerName: BrokerName,
			Scope:      v1alpha1.ScopeCluster,
			ClassID:    ClassID,
			Plans: []v1alpha1.PlanSchemas{{
				PlanID:         PlanID,
				InstanceCreate: raw(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"storage":{"type":"integer","minimum":1.5}},"required":["storage"]}`),
				InstanceUpdate: raw(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`),
				BindingCreate:  raw(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"role":{"enum":["ro","rw"]}}}`),
			}},
		},
	}
}

// SampleInstance is an instance being updated asynchronously after a failed attempt.
func SampleInstance() *v1alpha1.ServiceInstance {
	return &v1alpha1.ServiceInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: UserNamespace, Annotations: map[string]string{"owner": "payments"}},
		Spec: v1alpha1.ServiceInstanceSpec{
			Scope:                  v1alpha1.ScopeCluster,
			BrokerName:             BrokerName,
			ClassExternalName:      "postgres",
			ClassID:                ClassID,
			PlanExternalName:       "small",
			PlanID:                 PlanID,
			Parameters:             raw(`{"storage":20,"ratio":1.0,"big":12345678901234567890,"tags":["a","b"]}`),
			ParametersFrom:         []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "db-params", Key: "extra"}}},
			MaintenanceInfoVersion: "2.1.0",
			ExternalID:             InstanceID,
		},
		Status: v1alpha1.ServiceInstanceStatus{OperationStatus: v1alpha1.OperationStatus{
			Phase: v1alpha1.PhaseUpdating,
			Conditions: []metav1.Condition{{
				Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: 2,
				LastTransitionTime: SampleTime(), Reason: "UpdateInProgress", Message: "updating to plan small",
			}},
			ObservedGeneration: 2,
			InFlight: &v1alpha1.Operation{
				Type: v1alpha1.OperationUpdate, InstanceID: InstanceID, ServiceID: ClassID, PlanID: PlanID,
				MaintenanceInfoVersion: "2.1.0", ParametersChecksum: "sha256:9a8b", RequestID: "req-7",
				StartedAt: SampleTime(), Async: true, OperationKey: "op-123", NextPollAt: at(10 * time.Second),
				PollDeadline: at(time.Hour), LastDescription: "resizing disk",
			},
			Retry: &v1alpha1.RetryState{
				Attempts: 1, Reason: "UpdateCallFailed", LastError: "502 Bad Gateway",
				LastAttemptAt: at(-time.Minute), NextRetryAt: at(time.Minute),
			},
			OrphanMitigation: &v1alpha1.OrphanMitigationState{
				Reason: "ProvisionTimedOut", Message: "no answer within 60s", StartedAt: SampleTime(), RetryAfter: true,
			},
		},
			Provisioned: &v1alpha1.ProvisionedState{
				PlanID: "0c5e2f5a-legacy", ParametersChecksum: "sha256:1f2e", MaintenanceInfoVersion: "2.0.0",
				DashboardURL: "https://acme.example/dash?id=db&tab=1",
			},
			Usable:           ptr.To(true),
			UpdateRepeatable: ptr.To(false),
		},
	}
}

// SampleBinding is a bound binding of SampleInstance, with the same name.
func SampleBinding() *v1alpha1.ServiceBinding {
	return &v1alpha1.ServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: UserNamespace},
		Spec: v1alpha1.ServiceBindingSpec{
			InstanceName:   "db",
			ExternalID:     BindingID,
			Parameters:     raw(`{"role":"rw"}`),
			ParametersFrom: []v1alpha1.ParametersFromSource{{SecretKeyRef: &v1alpha1.SecretKeyReference{Name: "bind-params"}}},
			SecretName:     "db-credentials",
			SecretTransforms: []v1alpha1.SecretTransform{
				{RenameKey: &v1alpha1.RenameKeyTransform{From: "uri", To: "DATABASE_URL"}},
				{AddKey: &v1alpha1.AddKeyTransform{Key: "driver", StringValue: ptr.To("postgres")}},
				{AddKey: &v1alpha1.AddKeyTransform{Key: "blob", Value: []byte{0, 1, 2}}},
				{AddKey: &v1alpha1.AddKeyTransform{Key: "addr", JSONPathExpression: ptr.To("{.host}:{.port}")}},
				{AddKeysFrom: &v1alpha1.AddKeysFromTransform{SecretRef: v1alpha1.SecretReference{Name: "ca", Namespace: "certs"}}},
				{RemoveKey: &v1alpha1.RemoveKeyTransform{Key: "password_hint"}},
			},
			Predecessor: &v1alpha1.BindingReference{Name: "db-old", ExternalID: "5e4d3c2b-old"},
		},
		Status: v1alpha1.ServiceBindingStatus{OperationStatus: v1alpha1.OperationStatus{
			Phase: v1alpha1.PhaseReady,
			Conditions: []metav1.Condition{{
				Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1,
				LastTransitionTime: SampleTime(), Reason: "Bound", Message: "credentials in Secret db-credentials",
			}},
			ObservedGeneration: 1,
			InFlight: &v1alpha1.Operation{
				Type: v1alpha1.OperationBind, InstanceID: InstanceID, BindingID: BindingID, StartedAt: SampleTime(),
			},
			Retry:            &v1alpha1.RetryState{Attempts: 1},
			OrphanMitigation: &v1alpha1.OrphanMitigationState{Reason: "BindTimedOut", StartedAt: SampleTime()},
		},
			Bound: &v1alpha1.BoundState{
				BindingID:          BindingID,
				ParametersChecksum: "sha256:77aa",
				SyslogDrain:        true,
				RouteService:       true,
				VolumeMounts: []v1alpha1.VolumeMount{{
					Driver: "nfs", ContainerDir: "/data", Mode: "rw", DeviceType: "shared",
					Device: v1alpha1.VolumeDevice{VolumeID: "vol-1"},
				}},
				Endpoints:   []v1alpha1.Endpoint{{Host: "pg.acme.example", Ports: []string{"5432", "9000-9010"}, Protocol: "tcp"}},
				ExpiresAt:   at(30 * 24 * time.Hour),
				RenewBefore: at(23 * 24 * time.Hour),
			},
			Secret: &v1alpha1.CredentialsSecret{
				Name: "db-credentials", Keys: []string{"DATABASE_URL", "addr", "blob", "driver"}, WrittenAt: SampleTime(),
			},
		},
	}
}

// SampleRecords returns one sample of each kind.
func SampleRecords() []v1alpha1.Record {
	return []v1alpha1.Record{SampleBroker(), SampleClass(), SamplePlanSchemas(), SampleInstance(), SampleBinding()}
}

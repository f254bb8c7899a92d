package broker

// Ids of the demo catalog (catalog.yaml), for tests that use it.
const (
	DemoPostgresServiceID = "80d0a3c5-df7f-4144-a6ca-6d2be96b9701"
	// DemoPostgresHobbyPlanID: free, synchronous, draft-04 schemas with
	// defaults and enums, dashboard.
	DemoPostgresHobbyPlanID = "d198dfce-cbdd-4e91-943e-c123bd2fb864"
	// DemoPostgresStandardPlanID: paid, async provision/update/deprovision,
	// draft 2020-12 schemas, maintenance_info 2.1.0,
	// maximum_polling_duration, Retry-After.
	DemoPostgresStandardPlanID = "d3c264c8-68cf-48f7-9c49-26cb0fbff19f"
	// DemoPostgresHAPlanID: paid, not plan_updateable, binding_rotatable,
	// async provision/deprovision/bind/unbind, expiring bindings, draft
	// 2019-09 schemas.
	DemoPostgresHAPlanID = "4aee5e8e-5c38-4b9a-8d7e-13b3d54e907a"

	DemoRedisServiceID = "a55e2848-27d8-4e52-8234-11ca582ce05a"
	// DemoRedisSmallPlanID: free, requires an app guid to bind; the service
	// is not plan_updateable and not retrievable.
	DemoRedisSmallPlanID = "3de5bea6-9333-462a-a27b-1bc3bf4f1524"
	// DemoRedisLargePlanID: paid, maintenance_info 7.2.4, requires an app.
	DemoRedisLargePlanID = "c34c03c3-bbd7-4dca-b602-5cc3fdf17a63"

	DemoObjectStorageServiceID = "80422806-2600-4046-aa50-c8749da7ea8b"
	// DemoObjectStorageBucketPlanID: free, bindable, synchronous.
	DemoObjectStorageBucketPlanID = "71fb204c-7a2f-4820-ac9e-72b8d9cfa948"
	// DemoObjectStorageArchivePlanID: paid, not bindable, async deprovision.
	DemoObjectStorageArchivePlanID = "aa09088d-9915-4d22-9f11-bffb5c0add9e"

	DemoLogDrainServiceID = "39a4ad1e-e6ec-49b8-9801-a148f60be434"
	// DemoLogDrainPlanID: the service requires syslog_drain, so bindings
	// carry a syslog_drain_url.
	DemoLogDrainPlanID = "cffc6b14-00e4-4594-9392-2a190f584ad2"
)

// Ids of the paired catalog (catalog-paired.yaml): every update of its plans
// must send parameters foo and bar together.
const (
	PairedServiceID = "4cc7af10-964d-4035-9c01-a48eae5a3166"
	// PairedBothPlanID: synchronous, draft-07 schemas.
	PairedBothPlanID = "323d884c-7a4b-4157-ba58-91ffb4eccce4"
	// PairedBothAsyncPlanID: async provision, update and deprovision, draft
	// 2020-12 schemas.
	PairedBothAsyncPlanID = "2ba03e5f-246d-41da-9e3c-b105aef095f5"
)

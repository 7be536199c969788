package client

// resendable classifies every method the daemon serves: true when its
// request may be sent again after it was written and its reply lost
// (reads, and settings that end the same however often they are
// applied), false when a second application could differ from one (a
// re-added unit runs again, a lease is stranded, a finish reported lost,
// a priority adjusted twice). A method missing here is treated as false;
// TestEveryServedMethodIsClassified fails until a new one is added.
var resendable = map[string]bool{
	// Work specs.
	"set_work_spec": true, "get_work_spec": true, "list_work_specs": true,
	"control_work_spec": true, "get_work_spec_meta": true, "archive": true,
	"clear": false, "del_work_spec": false,
	// Work units.
	"count_work_units": true, "get_work_units": true, "get_work_unit_status": true,
	"add_work_units": false, "prioritize_work_units": false, "del_work_units": false,
	"update_work_unit": false,
	// Leasing.
	"get_child_work_units": true,
	"get_work":             false,
	// Groups.
	"group_status": true,
	"cancel_group": false,
	// Workers.
	"worker_heartbeat": true, "worker_unregister": true, "list_worker_modes": true,
	"get_worker_info": true, "mode_counts": true, "worker_stats": true,
	// Server.
	"get_config": true, "now": true,
	// Lock service.
	"readlock": true,
	"lock":     false, "locksome": false, "renew": false, "unlock": false,
	"delete_namespace": false,
}

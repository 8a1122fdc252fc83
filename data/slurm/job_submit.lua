--[[
tidal's job_submit.lua (Slurm's job_submit/lua plugin; docs/slurm.md).

Jobs submitted to tidal's partitions are held (priority 0), so Slurm's own
scheduler never starts them: tidal adopts each one (it becomes a tidal job,
its comment "tidal:<id>"), chooses its nodes with its own scheduler, pins
the job to them (ReqNodeList) and releases it. Users keep their sbatch
scripts; only where and when change.

Install: copy this file next to slurm.conf, set JobSubmitPlugins=lua, and
list tidal's partitions below (the `partition:` of tidal serve's binder).
--]]

local tidal_partitions = { tidal = true }

-- The partition a job goes to: the one it names (the first of a list), or
-- the default partition.
local function partition_of(job_desc, part_list)
  local p = job_desc.partition
  if p ~= nil and p ~= "" then
    return string.match(p, "^[^,]+")
  end
  for _, part in pairs(part_list) do
    if part.flag_default == 1 then
      return part.name
    end
  end
  return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local p = partition_of(job_desc, part_list)
  if p ~= nil and tidal_partitions[p] then
    job_desc.priority = 0
    slurm.log_info("tidal: job %s in partition %s held for tidal", tostring(job_desc.name), p)
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

slurm.log_info("tidal: job_submit.lua loaded")
return slurm.SUCCESS

"""horovodrun on Tandem: Horovod 0.28.1's command line over Tandem's launchers.

Inside a Slurm allocation the job is one ``srun --horovod=on`` step placed as
``-np``/``-H`` say; outside one, ``tandem-run`` starts the ranks on this host,
and those of -H's other hosts over ssh.
Neither has rendezvous logic of its own here: this package only translates
Horovod's flags into those launchers' options and the variables the engine
already reads (docs/launchers.md).

flags        every flag of Horovod's parser: honoured (with the variable it
             sets) or refused (with what to do instead)
config_file  Horovod's --config-file YAML onto the same flags
hosts        -H / --hostfile, and the ranks' placement on them
check_build  -cb, in Horovod's layout, with what this install has
slurm        the srun step inside an allocation
local        tandem-run on this host
ssh          outside Slurm, the ranks of other hosts: checks and tandem-run's command
ssh_rank     (run as a file) one rank on the launcher's side: its layout, then
             exec here or ssh there with the rank on ssh's stdin
remote_rank  (run as a file, over ssh) the far end: the rank in its own
             process group, stopped when ssh's stdin closes
output       Horovod's ``[rank]<stdout>:`` lines and --output-filename
main         the command
"""
